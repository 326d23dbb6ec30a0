package httpapi

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/engine"
	"github.com/llamatray/llamatray/router/testbed"
	"github.com/llamatray/llamatray/router/wire"
)

func TestCoalescerMergesWithinWindow(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	c := newCoalescer(100 * time.Millisecond)

	// The first event of a quiet model goes out at once.
	if out := c.add(engine.Event{Seq: 1, Model: "a", Kind: "state", State: engine.StateLoading}, at(0)); len(out) != 1 || out[0].Seq != 1 {
		t.Fatalf("first: %+v", out)
	}
	// Within the window: held and merged. A state change followed by lease changes stays a "state"
	// event carrying the latest state and count.
	for i, ev := range []engine.Event{
		{Seq: 2, Model: "a", Kind: "lease", State: engine.StateLoading, Active: 1},
		{Seq: 3, Model: "a", Kind: "state", State: engine.StateLoaded, Active: 1, Message: "ready"},
		{Seq: 4, Model: "b", Kind: "lease", State: engine.StateLoaded, Active: 3},
		{Seq: 5, Model: "a", Kind: "lease", Active: 2},
	} {
		if out := c.add(ev, at(10+i)); ev.Model == "a" && len(out) != 0 {
			t.Fatalf("event %d sent inside the window: %+v", ev.Seq, out)
		}
	}
	if next, ok := c.next(); !ok || !next.Equal(at(100)) {
		t.Fatalf("next due %v %v", next, ok)
	}
	if out := c.flush(at(99), false); len(out) != 0 {
		t.Fatalf("flushed early: %+v", out)
	}
	out := c.flush(at(100), false)
	if len(out) != 1 {
		t.Fatalf("want one merged event, got %+v", out)
	}
	if m := out[0]; m.Seq != 5 || m.Kind != "state" || m.State != engine.StateLoaded || m.Active != 2 || m.Message != "ready" {
		t.Fatalf("merged %+v", m)
	}
	// Merging rules, one window each.
	for _, tc := range []struct {
		evs  []engine.Event
		want engine.Event
	}{
		{[]engine.Event{{Kind: "state", State: engine.StateLoading, Message: "loading 45%"}, {Kind: "state", State: engine.StateLoaded}},
			engine.Event{Kind: "state", State: engine.StateLoaded}},
		{[]engine.Event{{Kind: "queue", State: engine.StateUnloaded, Message: "2 queued"}, {Kind: "lease", State: engine.StateUnloaded, Active: 0}},
			engine.Event{Kind: "queue", State: engine.StateUnloaded, Message: "2 queued"}},
		{[]engine.Event{{Kind: "lease", State: engine.StateLoaded, Active: 1}, {Kind: "pressure", State: engine.StateLoaded, Active: 1, Message: "low memory"}},
			engine.Event{Kind: "pressure", State: engine.StateLoaded, Active: 1, Message: "low memory"}},
	} {
		m := newCoalescer(time.Second)
		m.add(engine.Event{Model: "x", Kind: "state"}, t0)
		for i, ev := range tc.evs {
			ev.Model, ev.Seq = "x", uint64(i+1)
			m.add(ev, t0)
		}
		got := m.flush(t0, true)
		tc.want.Model, tc.want.Seq = "x", uint64(len(tc.evs))
		if len(got) != 1 || got[0] != tc.want {
			t.Errorf("merge %+v: got %+v, want %+v", tc.evs, got, tc.want)
		}
	}
	// A model-less event flushes what is pending first, keeping order.
	c.add(engine.Event{Seq: 6, Model: "a", Kind: "lease", Active: 1}, at(120))
	out = c.add(engine.Event{Seq: 7, Kind: "catalog"}, at(121))
	if len(out) != 2 || out[0].Seq != 6 || out[1].Seq != 7 {
		t.Fatalf("catalog flush %+v", out)
	}
	// Quiet for a window: immediate again.
	if out := c.add(engine.Event{Seq: 8, Model: "a", Kind: "state", State: engine.StateStopping}, at(400)); len(out) != 1 {
		t.Fatalf("after quiet %+v", out)
	}
}

// TestCoalescerRate feeds one event per millisecond for a simulated 3 s and checks that no 1 s span
// carries more than 10 events of a model, that sequence numbers only grow and that the last state wins.
func TestCoalescerRate(t *testing.T) {
	t0 := time.Unix(0, 0)
	c := newCoalescer(100 * time.Millisecond)
	var sent []time.Time
	var seqs []uint64
	var last engine.Event
	emit := func(now time.Time, evs []engine.Event) {
		for _, ev := range evs {
			sent, seqs, last = append(sent, now), append(seqs, ev.Seq), ev
		}
	}
	states := []engine.State{engine.StateLoading, engine.StateLoaded, engine.StateSleeping}
	for ms := 0; ms < 3000; ms++ {
		now := t0.Add(time.Duration(ms) * time.Millisecond)
		if next, ok := c.next(); ok && !now.Before(next) {
			emit(now, c.flush(now, false))
		}
		ev := engine.Event{Seq: uint64(ms + 1), Model: "m", Kind: "lease", Active: ms % 4}
		if ms%7 == 0 {
			ev.Kind, ev.State = "state", states[ms%3]
		}
		emit(now, c.add(ev, now))
	}
	end := t0.Add(3 * time.Second)
	emit(end, c.flush(end, true))
	for i := range sent {
		n := 0
		for j := i; j < len(sent) && sent[j].Sub(sent[i]) < time.Second; j++ {
			n++
		}
		if n > 10 {
			t.Fatalf("%d events within 1 s from %v", n, sent[i])
		}
	}
	for i := 1; i < len(seqs); i++ {
		if seqs[i] <= seqs[i-1] {
			t.Fatalf("reordered: %v", seqs)
		}
	}
	if last.Seq != 3000 || last.Active != 2999%4 || last.State != states[2996%3] {
		t.Fatalf("last %+v", last)
	}
	if len(sent) < 25 {
		t.Fatalf("only %d events in 3 s: over-throttled", len(sent))
	}
}

func TestEventsSSE(t *testing.T) {
	srv, fe, _ := testRouter(t, "", nil, func(server *Server) {
		server.coalesce = 50 * time.Millisecond
		server.keepAlive = 40 * time.Millisecond
	})
	resp, err := http.Get(srv.URL + "/models/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatal(resp.Header)
	}
	<-fe.subscribed
	br := bufio.NewReader(resp.Body)
	if ev := testbed.ReadSSEEvent(t, br); ev != ": connected\n\n" {
		t.Fatalf("%q", ev)
	}
	now := time.Now()
	fe.publish(engine.Event{Seq: 1, Time: now, Model: "m1", Kind: "state", State: engine.StateLoading, Message: "loading"})
	for i := 2; i <= 50; i++ {
		fe.publish(engine.Event{Seq: uint64(i), Time: now, Model: "m1", Kind: "lease", State: engine.StateLoaded, Active: i % 3})
	}
	fe.publish(engine.Event{Seq: 51, Time: now, Model: "m1", Kind: "state", State: engine.StateLoaded, Active: 0})

	var got []wire.Event
	for len(got) == 0 || got[len(got)-1].Seq != 51 {
		ev := testbed.ReadSSEEvent(t, br)
		if strings.HasPrefix(ev, ": keep-alive") {
			continue
		}
		_, data, ok := strings.Cut(ev, "data: ")
		if !ok {
			t.Fatalf("%q", ev)
		}
		var e wire.Event
		if err := json.Unmarshal([]byte(data), &e); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(ev, "id: ") {
			t.Fatalf("no id line: %q", ev)
		}
		got = append(got, e)
	}
	if got[0].Seq != 1 || got[0].State != "loading" || got[0].Message != "loading" || got[0].Kind != "state" {
		t.Fatalf("first %+v", got[0])
	}
	if n := len(got); n > 3 {
		t.Fatalf("%d events for a burst within one window", n)
	}
	if l := got[len(got)-1]; l.State != "loaded" || l.Active != 0 || l.Kind != "state" || l.Model != "m1" {
		t.Fatalf("last %+v", l)
	}
	// Idle: keep-alive comments flow.
	if ev := testbed.ReadSSEEvent(t, br); ev != ": keep-alive\n\n" {
		t.Fatalf("%q", ev)
	}
}
