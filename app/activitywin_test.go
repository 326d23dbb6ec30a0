package app

import (
	"image/color"
	"strings"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/engine"
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

// Without loading comments from the router (stream_loading_progress off), Try it says why it
// waits from the model's state.
func TestTryItWaitsWithTheModelState(t *testing.T) {
	u, _, l := newTestUI(t, windowSnapshot())
	l.wait(func() {
		u.showTryIt("qwen-7b")
		w := u.tryIt
		w.waiting = true
		s := windowSnapshot()
		for i := range s.Models {
			if s.Models[i].ID == "qwen-7b" {
				s.Models[i].State, s.Models[i].Progress = engine.StateLoading, 0.4
			}
		}
		w.update(s)
		if w.status.Text != "Waiting: loading 40%…" {
			t.Errorf("loading: %q", w.status.Text)
		}
		for i := range s.Models {
			if s.Models[i].ID == "qwen-7b" {
				s.Models[i].State, s.Models[i].Queued = engine.StateUnloaded, 1
			}
		}
		w.update(s)
		if !strings.Contains(w.status.Text, "queued for memory") {
			t.Errorf("queued: %q", w.status.Text)
		}
		w.event(tryEvent{comment: "loading model qwen-7b (queued)"}, "")
		w.update(s)
		if w.status.Text != "Waiting: loading model qwen-7b (queued)…" {
			t.Errorf("the router's word is replaced: %q", w.status.Text)
		}
		w.event(tryEvent{delta: "Hi", elapsed: 1500 * time.Millisecond}, "Hi")
		if w.status.Text != "First token after 1.5 s; generating…" || w.answer.Text != "Hi" {
			t.Errorf("first token: %q %q", w.status.Text, w.answer.Text)
		}
	})
}
