package activity

import (
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// scanAll passes body through a Scanner in reads of chunk bytes and returns what passed and the usage.
func scanAll(t *testing.T, body string, chunk int) (string, *Usage) {
	t.Helper()
	var got *Usage
	s := NewScanner(io.NopCloser(strings.NewReader(body)), func(u *Usage) { got = u })
	var r io.Reader = s
	if chunk == 1 {
		r = iotest.OneByteReader(s)
	}
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got == nil {
		t.Fatal("done was not called")
	}
	return string(out), got
}

const chatJSON = `{"choices":[{"index":0,"message":{"role":"assistant","content":"say \"timings\":{\"prompt_n\":99} {"}}],` +
	`"created":1,"model":"m","timings":{"prompt_n":7,"cache_n":3,"prompt_ms":12.5,"predicted_n":20,"predicted_ms":400},` +
	`"usage":{"completion_tokens":20,"prompt_tokens":10,"total_tokens":30,"prompt_tokens_details":{"cached_tokens":3}}}`

const chatStream = "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":null}}]}\n\n" +
	"data: {\"choices\":[{\"delta\":{\"content\":\"\\\"usage\\\":{\"}}]}\n\n" +
	"data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}],\"timings\": {\"prompt_n\":5,\"prompt_ms\":2,\"predicted_n\":8,\"predicted_ms\":100}}\n\n" +
	"data: [DONE]\n\n"

const anthropicStream = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":11,\"output_tokens\":0}}}\n\n" +
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}\n\n" +
	"event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":4}}\n\n"

func TestScannerReadsTimingsAndUsage(t *testing.T) {
	for _, chunk := range []int{0, 1, 2, 3, 5, 7, 9, 11, 13} { // keys and objects split across reads at every place
		out, u := scanAll(t, chatJSON, chunk)
		if out != chatJSON {
			t.Fatalf("chunk %d: body changed", chunk)
		}
		if !u.HasTimings || u.Timings.PromptN != 7 || u.Timings.PredictedN != 20 || u.Timings.PromptMs != 12.5 {
			t.Fatalf("chunk %d: timings %+v (text that looks like a key must not count)", chunk, u.Timings)
		}
		if !u.HasUsage || u.In() != 10 || u.Out() != 20 {
			t.Fatalf("chunk %d: in %d out %d", chunk, u.In(), u.Out())
		}
		if u.FirstByte.IsZero() {
			t.Fatal("no first byte time")
		}

		out, u = scanAll(t, chatStream, chunk)
		if out != chatStream {
			t.Fatal("stream changed")
		}
		if !u.HasTimings || u.HasUsage || u.In() != 5 || u.Out() != 8 || u.Timings.PredictedMs != 100 {
			t.Fatalf("chunk %d: stream usage %+v", chunk, u)
		}

		_, u = scanAll(t, anthropicStream, chunk)
		if u.HasTimings || u.In() != 11 || u.Out() != 4 {
			t.Fatalf("chunk %d: anthropic in %d out %d", chunk, u.In(), u.Out())
		}
	}
}

func TestScannerBoundsItsObject(t *testing.T) {
	big := `{"timings":{"x":"` + strings.Repeat("a", 2*maxObject) + `","prompt_n":1},"usage":{"prompt_tokens":2}}`
	_, u := scanAll(t, big, 0)
	if u.HasTimings {
		t.Fatalf("an oversized object was read: %+v", u)
	}
	if u.In() != 2 {
		t.Fatalf("the object after an oversized one was lost: in %d", u.In())
	}
}

func TestRecorderBuckets(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 30, 0, time.UTC)
	r := New(time.Minute, 60)
	r.SetClock(func() time.Time { return now })
	u := &Usage{HasTimings: true}
	u.Timings.PromptN, u.Timings.PromptMs, u.Timings.PredictedN, u.Timings.PredictedMs = 10, 50, 100, 2000
	r.Record(Sample{Model: "b", End: now, Status: 200, Wait: 150 * time.Millisecond, Usage: u})
	r.Record(Sample{Model: "b", End: now.Add(-5 * time.Minute), Status: 200, Wait: 50 * time.Millisecond, Usage: u})
	r.Record(Sample{Model: "b", End: now.Add(-2 * time.Hour), Status: 200, Usage: u}) // out of the window, in the same slot as now
	r.Record(Sample{Model: "a", End: now, Status: 503, Wait: time.Second})
	r.Record(Sample{Model: "old", End: now.Add(-61 * time.Minute), Status: 200})

	doc := r.Snapshot()
	if doc.BucketSeconds != 60 || !doc.Since.Equal(time.Date(2026, 1, 1, 11, 1, 0, 0, time.UTC)) {
		t.Fatalf("window %v / %d s", doc.Since, doc.BucketSeconds)
	}
	if len(doc.Models) != 2 || doc.Models[0].Model != "a" || doc.Models[1].Model != "b" {
		t.Fatalf("models %+v", doc.Models)
	}
	a, b := doc.Models[0], doc.Models[1]
	if a.Total.Requests != 1 || a.Total.Errors != 1 || a.Total.TTFTMs != 0 || a.Total.QueueWaitMs != 1000 {
		t.Fatalf("a: %+v", a.Total)
	}
	bt := b.Total
	if bt.Requests != 2 || bt.Errors != 0 || bt.TokensIn != 20 || bt.TokensOut != 200 {
		t.Fatalf("b totals %+v", bt)
	}
	if bt.TTFTMs != 150 || bt.TokensPerSecond != 50 || bt.QueueWaitMs != 100 || bt.MaxQueueWaitMs != 150 {
		t.Fatalf("b timings %+v", bt)
	}
	if len(b.Buckets) != 60 || b.Buckets[59].Requests != 1 || b.Buckets[54].Requests != 1 || b.Buckets[58].Requests != 0 {
		t.Fatalf("b buckets: last %+v, -5 min %+v", b.Buckets[59], b.Buckets[54])
	}
	if !b.Buckets[59].Start.Equal(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)) {
		t.Fatalf("last bucket starts %v", b.Buckets[59].Start)
	}
	// An hour later everything has aged out.
	now = now.Add(time.Hour)
	if doc := r.Snapshot(); len(doc.Models) != 0 {
		t.Fatalf("aged models %+v", doc.Models)
	}
}

func TestNilRecorder(t *testing.T) {
	var r *Recorder
	r.Record(Sample{Model: "a"})
}

// A long stream costs the scanner a handful of allocations in all, none per event: it holds only
// the object being read.
func TestScannerAllocatesPerAnswerNotPerEvent(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 500; i++ {
		b.WriteString("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" token\"}}],\"created\":1,\"id\":\"chatcmpl-x\",\"model\":\"m\",\"object\":\"chat.completion.chunk\"}\n\n")
	}
	b.WriteString("data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}],\"timings\":{\"prompt_n\":5,\"prompt_ms\":2,\"predicted_n\":500,\"predicted_ms\":100}}\n\ndata: [DONE]\n\n")
	stream := b.String()
	buf := make([]byte, 512)
	var last *Usage
	allocs := testing.AllocsPerRun(20, func() {
		s := NewScanner(io.NopCloser(strings.NewReader(stream)), func(u *Usage) { last = u })
		for {
			if _, err := s.Read(buf); err != nil {
				break
			}
		}
		s.Close()
	})
	if last == nil || last.Out() != 500 {
		t.Fatalf("usage %+v", last)
	}
	if allocs > 24 { // the reader, the closer, the callback, the scanner, the object growing, json
		t.Fatalf("%.0f allocations for a stream of 500 events", allocs)
	}
	t.Logf("%.0f allocations for a stream of 500 events (%d bytes)", allocs, len(stream))
}

func TestNumbersReadsTopLevelNumbersOnly(t *testing.T) {
	got := map[string]float64{}
	ok := numbers([]byte(` {"a": 1, "s":"x\"}{", "n":{"a":9,"b":[1,{"c":2}]}, "t":true, "z":null, "f":false, "b":-2.5e1 , "arr":[3]} `), func(k []byte, v float64) { got[string(k)] = v })
	if !ok || len(got) != 2 || got["a"] != 1 || got["b"] != -25 {
		t.Fatalf("ok %v got %v", ok, got)
	}
	for _, bad := range []string{``, `{`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{"a":1}x`, `[1]`, `{"a":"x}`, `{"a":1 "b":2}`, `{"a":tru}`, `{"a":1-}`} {
		if numbers([]byte(bad), func([]byte, float64) {}) {
			t.Errorf("%q read as an object", bad)
		}
	}
	if !numbers([]byte(`{}`), func([]byte, float64) {}) {
		t.Error("{} refused")
	}
}
