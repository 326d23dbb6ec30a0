package app

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/llamatray/llamatray/router/service"
)

// tryItWindow is "Try it": a conversation with a model. Each prompt goes, with the turns before
// it, to the router's endpoint over HTTP like any client's, so it waits, loads and evicts by the
// same rules; while it waits it shows why (the loading comments the router streams, else the
// model's state), and each answer ends with its time to first token and tokens per second. The
// prompt has the cursor when the window opens and after each answer; Enter sends, Shift+Enter
// starts a new line. Fields are used on the UI thread.
type tryItWindow struct {
	u       *ui
	win     fyne.Window
	model   *widget.Select
	prompt  *promptEntry
	send    *widget.Button
	stop    *widget.Button
	newChat *widget.Button
	chat    *fyne.Container // the turns: a label per prompt and per answer
	answer  *widget.Label   // the answer being written, nil before the first prompt
	status  *widget.Label
	scroll  *container.Scroll

	turns   []chatMessage      // the conversation so far, sent with each prompt
	cancel  context.CancelFunc // ends the request in flight; nil when none
	waiting bool               // a request is in flight and no token came yet
	next    bool               // Enter was pressed while an answer was written: send once it ends
	reason  string             // the router's last word on why it waits, "" when none
	want    string             // a model asked for before the snapshot listed it, "" when none
}

// chatMessage is one turn of the conversation, as the chat completions API takes it.
type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// showTryIt opens the Try-it window, or brings it forward; model, when not empty, is picked.
func (u *ui) showTryIt(model string) {
	if u.tryIt == nil {
		u.tryIt = newTryItWindow(u)
		u.tryIt.win.SetOnClosed(func() {
			if u.tryIt.cancel != nil {
				u.tryIt.cancel()
			}
			u.tryIt = nil
		})
	}
	u.tryIt.want = model // picked now, or by the first snapshot that lists it (a download just made)
	u.tryIt.update(u.snap)
	raise(u.tryIt.win)
	u.tryIt.win.Canvas().Focus(u.tryIt.prompt)
}

func newTryItWindow(u *ui) *tryItWindow {
	t := &tryItWindow{u: u, win: u.newWindow("Try it", fyne.NewSize(720, 540))}
	t.model = widget.NewSelect(nil, nil)
	t.model.PlaceHolder = "Pick a model"
	t.prompt = newPromptEntry(t.start)
	t.prompt.SetPlaceHolder("Type a prompt and press Enter (Shift+Enter for a new line), e.g. “Write a haiku about the sea.”")
	t.send = widget.NewButtonWithIcon("Send", theme.MailSendIcon(), t.start)
	t.send.Importance = widget.HighImportance
	t.stop = widget.NewButtonWithIcon("Stop", theme.MediaStopIcon(), func() {
		if t.cancel != nil {
			t.cancel()
		}
	})
	t.stop.Disable()
	t.newChat = widget.NewButtonWithIcon("New chat", theme.ContentClearIcon(), t.clear)
	t.newChat.Disable()
	t.status = wrapLabel("")
	t.chat = container.NewVBox()
	t.scroll = container.NewVScroll(t.chat)
	top := container.NewBorder(nil, nil, widget.NewLabel("Model"), t.newChat, t.model)
	bottom := container.NewVBox(
		widget.NewSeparator(),
		t.status,
		container.NewBorder(nil, nil, nil, container.NewVBox(t.send, t.stop), t.prompt),
	)
	t.win.SetContent(container.NewBorder(top, bottom, nil, nil, t.scroll))
	return t
}

// promptEntry is the prompt: Enter sends, Shift+Enter starts a new line.
type promptEntry struct {
	widget.Entry
	shift bool // a Shift key is held (the window's key-down and key-up events)
	send  func()
}

func newPromptEntry(send func()) *promptEntry {
	e := &promptEntry{send: send}
	e.MultiLine = true
	e.Wrapping = fyne.TextWrapWord
	e.ExtendBaseWidget(e)
	e.SetMinRowsVisible(2)
	return e
}

// KeyDown and KeyUp follow the Shift keys (desktop.Keyable).
func (e *promptEntry) KeyDown(k *fyne.KeyEvent) {
	if k.Name == desktop.KeyShiftLeft || k.Name == desktop.KeyShiftRight {
		e.shift = true
	}
	e.Entry.KeyDown(k)
}

func (e *promptEntry) KeyUp(k *fyne.KeyEvent) {
	if k.Name == desktop.KeyShiftLeft || k.Name == desktop.KeyShiftRight {
		e.shift = false
	}
	e.Entry.KeyUp(k)
}

// TypedKey sends on Enter; with Shift held the entry adds a new line (it submits on Shift+Enter only
// when OnSubmitted is set, which it is not).
func (e *promptEntry) TypedKey(k *fyne.KeyEvent) {
	if (k.Name == fyne.KeyReturn || k.Name == fyne.KeyEnter) && !e.shift {
		e.send()
		return
	}
	e.Entry.TypedKey(k)
}

// update follows a snapshot: the models to pick from (a loaded one first picked, when there is
// one) and, while a request waits without word from the router, the picked model's state.
func (t *tryItWindow) update(s Snapshot) {
	var ids []string
	for _, m := range s.Models {
		ids = append(ids, m.ID)
	}
	if fmt.Sprint(ids) != fmt.Sprint(t.model.Options) {
		t.model.SetOptions(ids)
	}
	if i := slices.IndexFunc(ids, func(id string) bool { return strings.EqualFold(id, t.want) }); t.want != "" && i >= 0 {
		t.model.SetSelected(ids[i])
		t.want = ""
	}
	if t.model.Selected == "" && len(ids) > 0 {
		t.model.SetSelected(pickModel(s))
	}
	switch w := t.modelWait(s); {
	case !t.waiting:
	case w != "":
		t.status.SetText(w)
	case t.reason == "":
		t.status.SetText(t.waitText(s))
	}
}

// pickModel is the model Try it picks by itself: a loaded one (answering at once) when there is one,
// else a sleeping one, else the first.
func pickModel(s Snapshot) string {
	for _, want := range []service.State{service.StateLoaded, service.StateSleeping, service.StateLoading} {
		for _, m := range s.Models {
			if m.State == want {
				return m.ID
			}
		}
	}
	if len(s.Models) == 0 {
		return ""
	}
	return s.Models[0].ID
}

// modelWait is why the picked model's queued requests wait, as the engine says and every surface
// shows it (view.WaitText): "Waiting: every model is busy since 12:03:04 (alpha 1 request)…"; ""
// when the snapshot gives no reason, or while the model's own load runs (the router's comments and
// the model's state say how far it is).
func (t *tryItWindow) modelWait(s Snapshot) string {
	m, _ := s.model(t.model.Selected)
	if w := waitText(m); w != "" {
		return "Waiting: " + strings.TrimPrefix(w, "waiting: ") + "…"
	}
	return ""
}

// waitText guesses why the request in flight waits from the model's state in s, when neither the
// engine nor the router gave a reason.
func (t *tryItWindow) waitText(s Snapshot) string {
	switch m, _ := s.model(t.model.Selected); m.State {
	case service.StateLoading:
		return "Waiting: " + stateText(m) + "…"
	case service.StateSleeping:
		return "Waiting: waking " + m.ID + "…"
	}
	return "Waiting for the first token…"
}

// clear starts a new conversation.
func (t *tryItWindow) clear() {
	if t.cancel != nil {
		t.cancel() // its done finds the answer gone and leaves the window to the new chat
	}
	t.cancel, t.waiting, t.next = nil, false, false
	t.send.Enable()
	t.stop.Disable()
	t.turns, t.answer = nil, nil
	t.chat.Objects = nil
	t.chat.Refresh()
	t.status.SetText("")
	t.newChat.Disable()
	t.win.Canvas().Focus(t.prompt)
}

// start sends the prompt, with the conversation before it; the answer streams in from a goroutine.
func (t *tryItWindow) start() {
	model, prompt := t.model.Selected, strings.TrimSpace(t.prompt.Text)
	switch {
	case t.cancel != nil:
		// An answer is being written: the prompt goes once it has ended (Stop ends it sooner).
		if prompt != "" {
			t.next = true
			t.status.SetText("Sends when this answer ends…")
		}
		return
	case model == "":
		t.status.SetText("Pick a model first.")
		return
	case prompt == "":
		t.status.SetText("Type a prompt first.")
		return
	case t.u.snap.ListenAddr == "" || t.u.snap.ListenErr != "":
		t.status.SetText("The router is not serving, so nothing can be sent.")
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.cancel, t.waiting, t.reason = cancel, true, ""
	t.turns = append(t.turns, chatMessage{Role: "user", Content: prompt})
	asked := boldLabel(prompt)
	asked.Wrapping = fyne.TextWrapWord
	t.answer = wrapLabel("…")
	t.answer.Selectable = true
	t.chat.Objects = append(t.chat.Objects, asked, t.answer)
	t.chat.Refresh()
	t.scroll.ScrollToBottom()
	t.prompt.SetText("")
	t.status.SetText("Sending…")
	t.send.Disable()
	t.stop.Enable()
	t.newChat.Enable()
	key := ""
	if keys := t.u.b.Config().APIKeys; len(keys) > 0 {
		key = keys[0]
	}
	req := tryRequest{base: "http://" + t.u.snap.ListenAddr, key: key, model: model, messages: slices.Clone(t.turns)}
	answer := t.answer
	go func() {
		var text strings.Builder
		show := coalesce(t.u.onUI, func(ev tryEvent, so string) { t.event(answer, ev, so) })
		res, err := req.run(ctx, func(ev tryEvent) {
			text.WriteString(ev.delta)
			show(ev, text.String())
		})
		cancel()
		t.u.onUI(func() { t.done(answer, text.String(), res, err) })
	}()
}

// coalesce hands a stream's events to the UI thread without a backlog: the waiting comments and the
// first piece of the answer each as it comes, the later pieces as the answer so far, once per turn
// of the UI thread however fast the tokens come (so that a long answer costs no more redraws than
// the screen can show, and Stop is answered at once).
func coalesce(onUI func(func()), event func(tryEvent, string)) func(tryEvent, string) {
	first := true
	var (
		mu         sync.Mutex // guards latest, latestText and queued
		latest     tryEvent
		latestText string
		queued     bool // a redraw is on its way to the UI thread and will show latest
	)
	redraw := func() {
		mu.Lock()
		ev, text := latest, latestText
		queued = false // a piece that comes from now on asks for another turn
		mu.Unlock()
		event(ev, text)
	}
	return func(ev tryEvent, text string) {
		if ev.delta == "" || first {
			first = first && ev.delta == ""
			onUI(func() { event(ev, text) })
			return
		}
		mu.Lock()
		latest, latestText = ev, text
		ask := !queued
		queued = true
		mu.Unlock()
		if ask {
			onUI(redraw)
		}
	}
}

// event shows one piece of the stream: a reason to wait, or the answer so far.
func (t *tryItWindow) event(answer *widget.Label, ev tryEvent, text string) {
	if answer != t.answer {
		return // a New chat since
	}
	if ev.comment != "" && t.waiting {
		t.reason = ev.comment
		if w := t.modelWait(t.u.snap); w != "" {
			t.status.SetText(w) // the same reason, without the comment's "loading model X (…)" around it
		} else {
			t.status.SetText("Waiting: " + ev.comment + "…")
		}
		return
	}
	if ev.delta != "" {
		if t.waiting {
			t.waiting = false
			t.status.SetText(fmt.Sprintf("First token after %s; generating…", millis(float64(ev.elapsed)/float64(time.Millisecond))))
		}
		answer.SetText(strings.TrimLeft(text, " \n"))
		t.scroll.ScrollToBottom()
	}
}

// done shows how the request ended, keeps the answer as a turn of the conversation (what came of
// it, when stopped), and gives the prompt the cursor back.
func (t *tryItWindow) done(answer *widget.Label, text string, res tryResult, err error) {
	if answer != t.answer {
		return // a New chat since
	}
	t.cancel, t.waiting = nil, false
	next := t.next && err == nil && strings.TrimSpace(text) != ""
	t.next = false
	t.send.Enable()
	t.stop.Disable()
	var line string
	switch {
	case errors.Is(err, context.Canceled):
		line = "Stopped. " + res.summary()
	case err != nil:
		line = "Failed: " + err.Error()
	default:
		line = res.summary()
	}
	t.status.SetText(line)
	if strings.TrimSpace(text) == "" {
		// Nothing to keep: the prompt goes back into the entry, to send again.
		asked := t.turns[len(t.turns)-1].Content
		t.turns = t.turns[:len(t.turns)-1]
		t.chat.Objects = t.chat.Objects[:len(t.chat.Objects)-2]
		if t.prompt.Text == "" {
			t.prompt.SetText(asked)
		}
	} else {
		t.turns = append(t.turns, chatMessage{Role: "assistant", Content: text})
		answer.SetText(strings.TrimLeft(text, " \n"))
		stats := tinted(widget.NewLabel(line), widget.LowImportance)
		stats.SizeName = theme.SizeNameCaptionText
		t.chat.Objects = append(t.chat.Objects, stats)
	}
	t.answer = nil
	t.chat.Refresh()
	t.scroll.ScrollToBottom()
	t.win.Canvas().Focus(t.prompt)
	if next {
		t.start()
	}
}
