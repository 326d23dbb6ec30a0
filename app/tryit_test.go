package app

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/service"
	"github.com/llamatray/llamatray/router/testbed"
	"github.com/llamatray/llamatray/router/view"
)

// Try it is a conversation, driven by the keyboard through what has the focus: the prompt has the
// cursor when the window opens, Shift+Enter starts a new line, Enter sends it through a real service
// over HTTP to the fake llama-server; while the model loads it shows the router's loading comments,
// then the answer streams in, ending with time to first token and tokens per second. The cursor is
// back in the prompt, and the follow-up goes with the first turn (its prompt is longer than the
// first prompt and answer together). New chat empties it. The Activity window then shows the
// requests.
func TestTryItThroughTheRouter(t *testing.T) {
	t.Setenv("FAKE_LLAMA_LOAD_TIME", "2500ms")
	t.Setenv("FAKE_LLAMA_TOKENS", "24")
	t.Setenv("FAKE_LLAMA_TOKEN_DELAY", "20ms")
	svc, _ := startService(t, "127.0.0.1:"+strconv.Itoa(testbed.FreePort(t)))
	if err := svc.Edit(func(c *config.Config) error { c.StreamLoadingProgress = true; return nil }); err != nil {
		t.Fatal(err)
	}
	b := newServiceBackend(svc)
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
	})
	// The prompt has the cursor: Enter with nothing typed asks for a prompt.
	kb := &keyboard{t: t, l: l}
	if f := kb.focused(tw.win); f != fyne.Focusable(tw.prompt) {
		t.Fatalf("the focus is on %T when Try it opens, not the prompt", f)
	}
	kb.press(tw.win, fyne.KeyReturn, false)
	status := func() string {
		var s string
		l.wait(func() { s = tw.status.Text })
		return s
	}
	if s := status(); s != "Type a prompt first." {
		t.Errorf("status %q after Enter without a prompt", s)
	}
	// Shift+Enter is a new line, not a send.
	kb.typeText(tw.win, "Write a haiku")
	kb.press(tw.win, fyne.KeyReturn, true)
	kb.typeText(tw.win, "about the sea.")
	l.wait(func() {
		if tw.prompt.Text != "Write a haiku\nabout the sea." || tw.cancel != nil {
			t.Errorf("after Shift+Enter the prompt is %q, sending %v", tw.prompt.Text, tw.cancel != nil)
		}
	})
	kb.press(tw.win, fyne.KeyReturn, false)
	testbed.WaitFor(t, 10*time.Second, "the loading comment", func() bool { return strings.HasPrefix(status(), "Waiting: loading model tiny-chat") })
	shoot(t, l, tw.win, "tryit-1-waiting")
	answered := func(n int) func() bool {
		return func() bool {
			var ok bool
			l.wait(func() { ok = tw.cancel == nil && len(tw.turns) == 2*n && strings.Contains(tw.status.Text, "tokens/s") })
			return ok
		}
	}
	testbed.WaitFor(t, 10*time.Second, "the answer", answered(1))
	first := status()
	var answer string
	l.wait(func() { answer = tw.turns[1].Content })
	if len(strings.Fields(answer)) < 10 {
		t.Fatalf("answer %q", answer)
	}
	if !strings.Contains(first, "24 tokens") || !strings.HasPrefix(first, "First token after") {
		t.Errorf("summary %q: the timings' token count is missing", first)
	}

	// The cursor is back in the prompt: a follow-up goes with the turns before it.
	if f := kb.focused(tw.win); f != fyne.Focusable(tw.prompt) {
		t.Fatalf("the focus is on %T after the answer, not the prompt", f)
	}
	kb.typeText(tw.win, "Now one about the hills.")
	kb.press(tw.win, fyne.KeyReturn, false)
	testbed.WaitFor(t, 10*time.Second, "the second answer", answered(2))
	second := status()
	p1, p2 := promptTokens(t, first), promptTokens(t, second)
	if p2 <= p1+20 {
		t.Errorf("the follow-up's prompt has %d tokens, the first %d and its answer 24: the first turn was not sent with it", p2, p1)
	}
	l.wait(func() {
		if !hasText(tw.chat, "Write a haiku\nabout the sea.") || !hasText(tw.chat, "Now one about the hills.") || !hasText(tw.chat, first) || !hasText(tw.chat, second) {
			t.Errorf("the conversation shows %q", texts(tw.chat))
		}
	})
	shoot(t, l, tw.win, "tryit-2-answer")

	// New chat: an empty conversation, the cursor in the prompt.
	l.wait(func() { test.Tap(tw.newChat) })
	l.wait(func() {
		if len(tw.turns) != 0 || len(tw.chat.Objects) != 0 {
			t.Errorf("New chat left %d turns, %q", len(tw.turns), texts(tw.chat))
		}
	})
	if f := kb.focused(tw.win); f != fyne.Focusable(tw.prompt) {
		t.Errorf("the focus is on %T after New chat, not the prompt", f)
	}

	// The same request in the Activity window.
	var aw *activityWindow
	l.wait(func() {
		test.Tap(findButton(t, u.models.win.Content(), "Activity…"))
		aw = u.activity
	})
	if aw == nil {
		t.Fatal("Activity… opened nothing")
	}
	testbed.WaitFor(t, 10*time.Second, "the activity", func() bool {
		var ok bool
		l.wait(func() {
			ok = hasText(aw.list, "2 requests · ") && hasText(aw.list, "48 out") && hasText(aw.list, "tokens/s")
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

// promptTokens reads the prompt's token count from an answer's summary line.
func promptTokens(t *testing.T, summary string) int {
	t.Helper()
	m := regexp.MustCompile(`\(prompt (\d+) tokens\)`).FindStringSubmatch(summary)
	if m == nil {
		t.Fatalf("no prompt tokens in %q", summary)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// Try it picks a loaded model when there is one, else a sleeping one, else the first.
func TestTryItPicksLoaded(t *testing.T) {
	mk := func(id string, st service.State) Model {
		return Model{Model: view.Model{ModelStatus: service.ModelStatus{ID: id, State: st}}}
	}
	s := Snapshot{Models: []Model{mk("a", service.StateUnloaded), mk("b", service.StateSleeping), mk("c", service.StateLoaded)}}
	if got := pickModel(s); got != "c" {
		t.Errorf("picked %q, want the loaded c", got)
	}
	s.Models[2].State = service.StateUnloaded
	if got := pickModel(s); got != "b" {
		t.Errorf("picked %q, want the sleeping b", got)
	}
	s.Models[1].State = service.StateUnloaded
	if got := pickModel(s); got != "a" {
		t.Errorf("picked %q, want the first", got)
	}
}

// While an answer is being written, Enter keeps the typed follow-up and sends it once the answer
// ends (with the turns before it); New chat in the middle of an answer leaves a window that sends
// the next prompt at once.
func TestTryItWhileAnswering(t *testing.T) {
	t.Setenv("FAKE_LLAMA_TOKENS", "24")
	t.Setenv("FAKE_LLAMA_TOKEN_DELAY", "40ms")
	svc, _ := startService(t, "127.0.0.1:"+strconv.Itoa(testbed.FreePort(t)))
	u, l := newWatchedUI(t, newServiceBackend(svc))
	var tw *tryItWindow
	l.wait(func() { u.showTryIt("tiny-chat"); tw = u.tryIt })
	kb := &keyboard{t: t, l: l}
	state := func() (turns int, sending bool, status string) {
		l.wait(func() { turns, sending, status = len(tw.turns), tw.cancel != nil, tw.status.Text })
		return
	}
	generating := func() bool { _, sending, s := state(); return sending && strings.Contains(s, "generating") }

	kb.typeText(tw.win, "Write a haiku about the sea.")
	kb.press(tw.win, fyne.KeyReturn, false)
	testbed.WaitFor(t, 30*time.Second, "the first answer streaming", generating)
	kb.typeText(tw.win, "Now one about the hills.")
	kb.press(tw.win, fyne.KeyReturn, false)
	if turns, _, s := state(); turns != 1 || s != "Sends when this answer ends…" {
		t.Fatalf("Enter during the answer: %d turns, status %q", turns, s)
	}
	testbed.WaitFor(t, 30*time.Second, "the follow-up answered", func() bool {
		turns, sending, s := state()
		return turns == 4 && !sending && strings.Contains(s, "tokens/s")
	})
	l.wait(func() {
		if tw.turns[2].Content != "Now one about the hills." || tw.prompt.Text != "" {
			t.Errorf("the follow-up sent %q, the prompt left %q", tw.turns[2].Content, tw.prompt.Text)
		}
	})

	// New chat while an answer is written, then a prompt: it goes at once.
	kb.typeText(tw.win, "A third one.")
	kb.press(tw.win, fyne.KeyReturn, false)
	testbed.WaitFor(t, 30*time.Second, "the third answer streaming", generating)
	l.wait(func() { test.Tap(tw.newChat) })
	kb.typeText(tw.win, "Start again.")
	kb.press(tw.win, fyne.KeyReturn, false)
	if turns, sending, s := state(); turns != 1 || !sending {
		t.Fatalf("after New chat, Enter: %d turns, sending %v, status %q", turns, sending, s)
	}
	testbed.WaitFor(t, 30*time.Second, "the new chat's answer", func() bool {
		turns, sending, s := state()
		return turns == 2 && !sending && strings.Contains(s, "tokens/s")
	})
}

// A stream's pieces reach the UI thread without a backlog however fast they come: while the UI
// thread is busy, a thousand pieces queue one redraw, which shows the answer so far; the comments
// and the first piece (its time is the time to first token) each come as they are.
func TestTryItStreamCoalesced(t *testing.T) {
	var queue []func()
	type shown struct {
		ev   tryEvent
		text string
	}
	var got []shown
	show := coalesce(func(f func()) { queue = append(queue, f) }, func(ev tryEvent, text string) { got = append(got, shown{ev, text}) })
	run := func() {
		for len(queue) > 0 {
			f := queue[0]
			queue = queue[1:]
			f()
		}
	}
	show(tryEvent{comment: "loading model m (40%)"}, "")
	var text strings.Builder
	for i := range 1000 {
		piece := fmt.Sprintf(" w%d", i)
		text.WriteString(piece)
		show(tryEvent{delta: piece, elapsed: time.Duration(i+1) * time.Millisecond}, text.String())
	}
	if len(queue) != 3 {
		t.Fatalf("%d redraws queued for a comment and 1000 pieces, want 3 (the comment, the first piece, the answer so far)", len(queue))
	}
	run()
	if len(got) != 3 || got[0].ev.comment == "" || got[1].ev.elapsed != time.Millisecond || got[2].text != text.String() {
		t.Fatalf("shown %+v", got)
	}
	show(tryEvent{delta: " more"}, text.String()+" more")
	if len(queue) != 1 {
		t.Fatalf("a piece after the redraw queued %d redraws, want 1", len(queue))
	}
	run()
	if last := got[len(got)-1]; last.text != text.String()+" more" {
		t.Errorf("the last redraw shows %q", last.text)
	}
}
