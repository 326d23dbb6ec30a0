package app

import (
	"image/color"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2/widget"

	"github.com/llamatray/llamatray/router/service"
	"github.com/llamatray/llamatray/router/wire"
)

// The chart draws one bar per bucket with requests, as high as its tokens against the highest, red
// at the top where requests failed; the numbers line says what the totals hold.
func TestActivityChartAndNumbers(t *testing.T) {
	b := make([]wire.ActivityStats, 4)
	b[1] = wire.ActivityStats{Requests: 2, TokensOut: 100}
	b[3] = wire.ActivityStats{Requests: 2, Errors: 1, TokensOut: 50}
	back, bar, bad, grid := color.NRGBA{0, 0, 0, 255}, color.NRGBA{0, 0, 255, 255}, color.NRGBA{255, 0, 0, 255}, color.NRGBA{9, 9, 9, 255}
	img := drawActivity(b, 40, 21, back, bar, bad, grid)
	at := func(x, y int) color.NRGBA { return color.NRGBAModel.Convert(img.At(x, y)).(color.NRGBA) }
	if at(5, 10) != back || at(15, 1) != bar || at(15, 19) != bar {
		t.Errorf("bucket 0 empty, bucket 1 full height: %v %v %v", at(5, 10), at(15, 1), at(15, 19))
	}
	if at(35, 5) != back || at(35, 11) != bad || at(35, 19) != bar {
		t.Errorf("bucket 3 half height with a red top: %v %v %v", at(35, 5), at(35, 11), at(35, 19))
	}
	line := activityLine(wire.ActivityStats{Requests: 3, Errors: 1, TokensIn: 40, TokensOut: 150, TTFTMs: 420,
		TokensPerSecond: 38.51, QueueWaitMs: 12, MaxQueueWaitMs: 1200})
	if line != "3 requests (1 failed) · 40 tokens in, 150 out · first token 420 ms · 38.5 tokens/s · waited 12 ms on average, at most 1.2 s" {
		t.Errorf("line %q", line)
	}
	if c := chartCaption(b, 60); !strings.Contains(c, "per minute") || !strings.Contains(c, "highest bar 100") {
		t.Errorf("caption %q", c)
	}
}

// Try it says why its request waits: the engine's reason, in the words of every surface, over the
// router's comments; without either, a guess from the model's state.
func TestTryItWaitsWithTheModelState(t *testing.T) {
	u, _, l := newTestUI(t, windowSnapshot())
	l.wait(func() {
		u.showTryIt("qwen-7b")
		w := u.tryIt
		w.waiting = true
		w.answer = widget.NewLabel("") // the answer a request in flight writes
		s := windowSnapshot()
		set := func(f func(m *Model)) {
			for i := range s.Models {
				if s.Models[i].ID == "qwen-7b" {
					f(&s.Models[i])
				}
			}
			u.snap = s
			w.update(s)
		}
		set(func(m *Model) { m.State, m.Progress = service.StateLoading, 0.4 })
		if w.status.Text != "Waiting: loading 40%…" {
			t.Errorf("loading: %q", w.status.Text)
		}
		since := time.Date(2026, 1, 1, 12, 3, 4, 0, time.Local)
		set(func(m *Model) {
			m.State, m.Queued = service.StateUnloaded, 1
			m.Wait = &service.WaitReason{Kind: service.WaitBusy, Position: 1, Since: since, BusySince: since,
				Holders: []service.WaitModel{{ID: "llama-3b", State: service.StateLoaded, Active: 2}}}
		})
		if want := "Waiting: every model is busy since 12:03:04 (llama-3b 2 requests)…"; w.status.Text != want {
			t.Errorf("queued: %q, want %q", w.status.Text, want)
		}
		w.event(w.answer, tryEvent{comment: "loading model qwen-7b (waiting: every model is busy since 12:03:04 (llama-3b 2 requests))"}, "")
		if want := "Waiting: every model is busy since 12:03:04 (llama-3b 2 requests)…"; w.status.Text != want {
			t.Errorf("with the router's comment: %q, want %q", w.status.Text, want)
		}
		set(func(m *Model) { m.Wait = nil })
		w.event(w.answer, tryEvent{comment: "loading model qwen-7b (queued)"}, "")
		w.update(s)
		if w.status.Text != "Waiting: loading model qwen-7b (queued)…" {
			t.Errorf("without a reason, the router's word is replaced: %q", w.status.Text)
		}
		w.event(w.answer, tryEvent{delta: "Hi", elapsed: 1500 * time.Millisecond}, "Hi")
		if w.status.Text != "First token after 1.5 s; generating…" || w.answer.Text != "Hi" {
			t.Errorf("first token: %q %q", w.status.Text, w.answer.Text)
		}
	})
}
