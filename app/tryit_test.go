package app

import (
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"

	"fyne.io/fyne/v2/test"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/testbed"
)

// The Try-it pane sends a prompt through a real service over HTTP to the fake llama-server: while
// the model loads it shows the router's loading comments, then the answer streams in, ending with
// time to first token and tokens per second. The Activity window then shows the request.
func TestTryItThroughTheRouter(t *testing.T) {
	t.Setenv("FAKE_LLAMA_LOAD_TIME", "2500ms")
	t.Setenv("FAKE_LLAMA_TOKENS", "24")
	t.Setenv("FAKE_LLAMA_TOKEN_DELAY", "20ms")
	svc, _ := startService(t, "127.0.0.1:"+strconv.Itoa(testbed.FreePort(t)))
	if err := svc.Edit(func(c *config.Config) error { c.StreamLoadingProgress = true; return nil }); err != nil {
		t.Fatal(err)
	}
	b := &serviceBackend{svc: svc, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	u, l := newWatchedUI(t, b)

	var tw *tryItWindow
	l.wait(func() {
		u.models = newModelsWindow(u)
		u.models.show()
		test.Tap(findButton(t, u.models.win.Content(), "Try it…"))
		tw = u.tryIt
	})
	if tw == nil {
		t.Fatal("Try it… opened nothing")
	}
	l.wait(func() {
		if tw.model.Selected != "tiny-chat" {
			t.Errorf("picked %q, want the one model", tw.model.Selected)
		}
		test.Tap(tw.send) // no prompt yet
		if tw.status.Text != "Type a prompt first." {
			t.Errorf("status %q without a prompt", tw.status.Text)
		}
		tw.prompt.SetText("Write a haiku about the sea.")
		test.Tap(tw.send)
	})
	status := func() string {
		var s string
		l.wait(func() { s = tw.status.Text })
		return s
	}
	waitFor(t, "the loading comment", func() bool { return strings.HasPrefix(status(), "Waiting: loading model tiny-chat") })
	shoot(t, l, tw.win, "tryit-1-waiting")
	waitFor(t, "the answer", func() bool {
		return strings.HasPrefix(status(), "First token after") && strings.Contains(status(), "tokens/s")
	})
	var answer string
	l.wait(func() { answer = tw.answer.Text })
	if len(strings.Fields(answer)) < 10 {
		t.Fatalf("answer %q", answer)
	}
	if s := status(); !strings.Contains(s, "24 tokens") {
		t.Errorf("summary %q: the timings' token count is missing", s)
	}
	shoot(t, l, tw.win, "tryit-2-answer")

	// The same request in the Activity window.
	var aw *activityWindow
	l.wait(func() {
		test.Tap(findButton(t, u.models.win.Content(), "Activity…"))
		aw = u.activity
	})
	if aw == nil {
		t.Fatal("Activity… opened nothing")
	}
	waitFor(t, "the activity", func() bool {
		var ok bool
		l.wait(func() {
			ok = hasText(aw.list, "1 request · ") && hasText(aw.list, "24 out") && hasText(aw.list, "tokens/s")
		})
		return ok
	})
	l.wait(func() {
		if !hasText(aw.list, "tiny-chat") || !hasText(aw.list, "Tokens generated per minute") {
			t.Errorf("activity shows %q", texts(aw.list))
		}
	})
	shoot(t, l, aw.win, "activity")
	l.wait(func() { aw.win.Close() })
	l.wait(func() {
		if u.activity != nil {
			t.Error("the Activity window is still kept after closing")
		}
	})
}
