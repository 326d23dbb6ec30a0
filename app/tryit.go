package app

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/llamatray/llamatray/router/service"
)

// tryItWindow is "Try it": pick a model, type a prompt, and see the answer stream in with its time
// to first token and tokens per second. The prompt goes to the router's endpoint over HTTP like any
// client's, so it waits, loads and evicts by the same rules; while it waits it shows why (the
// loading comments the router streams, else the model's state). Fields are used on the UI thread.
type tryItWindow struct {
	u      *ui
	win    fyne.Window
	model  *widget.Select
	prompt *widget.Entry
	send   *widget.Button
	stop   *widget.Button
	answer *widget.Label
	status *widget.Label
	scroll *container.Scroll

	cancel  context.CancelFunc // ends the request in flight; nil when none
	waiting bool               // a request is in flight and no token came yet
	reason  string             // the router's last word on why it waits, "" when none
	want    string             // a model asked for before the snapshot listed it, "" when none
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
	u.tryIt.win.Show()
	u.tryIt.win.RequestFocus()
}

func newTryItWindow(u *ui) *tryItWindow {
	t := &tryItWindow{u: u, win: u.app.NewWindow("Try it")}
	t.win.SetIcon(appIcon)
	t.win.Resize(fyne.NewSize(720, 540))
	t.model = widget.NewSelect(nil, nil)
	t.model.PlaceHolder = "Pick a model"
	t.prompt = widget.NewMultiLineEntry()
	t.prompt.SetPlaceHolder("Type a prompt, e.g. “Write a haiku about the sea.”")
	t.prompt.SetMinRowsVisible(3)
	t.prompt.Wrapping = fyne.TextWrapWord
	t.send = widget.NewButtonWithIcon("Send", theme.MailSendIcon(), t.start)
	t.send.Importance = widget.HighImportance
	t.stop = widget.NewButtonWithIcon("Stop", theme.MediaStopIcon(), func() {
		if t.cancel != nil {
			t.cancel()
		}
	})
	t.stop.Disable()
	t.answer = widget.NewLabel("")
	t.answer.Wrapping = fyne.TextWrapWord
	t.answer.Selectable = true
	t.status = widget.NewLabel("")
	t.status.Wrapping = fyne.TextWrapWord
	t.scroll = container.NewVScroll(t.answer)
	top := container.NewVBox(
		container.NewBorder(nil, nil, widget.NewLabel("Model"), nil, t.model),
		t.prompt,
		container.NewHBox(t.send, t.stop),
		t.status,
		widget.NewSeparator(),
	)
	t.win.SetContent(container.NewBorder(top, nil, nil, nil, t.scroll))
	return t
}

// update follows a snapshot: the models to pick from and, while a request waits without word from
// the router, the picked model's state.
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
		t.model.SetSelected(ids[0])
	}
	switch w := t.modelWait(s); {
	case !t.waiting:
	case w != "":
		t.status.SetText(w)
	case t.reason == "":
		t.status.SetText(t.waitText(s))
	}
}

// modelWait is why the picked model's queued requests wait, as the engine says and every surface
// shows it (view.WaitText): "Waiting: every model is busy since 12:03:04 (alpha 1 request)…"; ""
// when the snapshot gives no reason, or while the model's own load runs (the router's comments and
// the model's state say how far it is).
func (t *tryItWindow) modelWait(s Snapshot) string {
	for _, m := range s.Models {
		if w := waitText(m); m.ID == t.model.Selected && w != "" {
			return "Waiting: " + strings.TrimPrefix(w, "waiting: ") + "…"
		}
	}
	return ""
}

// waitText guesses why the request in flight waits from the model's state in s, when neither the
// engine nor the router gave a reason.
func (t *tryItWindow) waitText(s Snapshot) string {
	for _, m := range s.Models {
		if m.ID != t.model.Selected {
			continue
		}
		switch {
		case m.State == service.StateLoading:
			return "Waiting: " + stateText(m) + "…"
		case m.State == service.StateSleeping:
			return "Waiting: waking " + m.ID + "…"
		}
	}
	return "Waiting for the first token…"
}

// start sends the prompt; the answer streams in from a goroutine.
func (t *tryItWindow) start() {
	model, prompt := t.model.Selected, strings.TrimSpace(t.prompt.Text)
	switch {
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
	t.answer.SetText("")
	t.status.SetText("Sending…")
	t.send.Disable()
	t.stop.Enable()
	key := ""
	if keys := t.u.b.Config().APIKeys; len(keys) > 0 {
		key = keys[0]
	}
	req := tryRequest{base: "http://" + t.u.snap.ListenAddr, key: key, model: model, prompt: prompt}
	go func() {
		var text strings.Builder
		res, err := req.run(ctx, func(ev tryEvent) {
			text.WriteString(ev.delta)
			answer := text.String()
			t.u.onUI(func() { t.event(ev, answer) })
		})
		cancel()
		t.u.onUI(func() { t.done(res, err) })
	}()
}

// event shows one piece of the stream: a reason to wait, or the answer so far.
func (t *tryItWindow) event(ev tryEvent, answer string) {
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
		t.answer.SetText(answer)
		t.scroll.ScrollToBottom()
	}
}

// done shows how the request ended.
func (t *tryItWindow) done(res tryResult, err error) {
	t.cancel, t.waiting = nil, false
	t.send.Enable()
	t.stop.Disable()
	switch {
	case errors.Is(err, context.Canceled):
		t.status.SetText("Stopped. " + res.summary())
	case err != nil:
		t.status.SetText("Failed: " + err.Error())
	default:
		t.status.SetText(res.summary())
	}
}

// tryRequest is one streamed chat completion through the router.
type tryRequest struct {
	base, key, model, prompt string
}

// tryEvent is one thing the stream said: a comment (why it waits) or a piece of the answer.
type tryEvent struct {
	comment string
	delta   string
	elapsed time.Duration // since the request was sent
}

// tryResult is what a finished stream measured.
type tryResult struct {
	firstToken      time.Duration // from sending to the first piece of the answer; 0 when none came
	total           time.Duration
	tokens          int     // generated, from llama-server's timings (else the pieces received)
	tokensPerSecond float64 // from llama-server's timings (else measured)
	promptTokens    int
}

// summary is the line shown when the answer is complete.
func (r tryResult) summary() string {
	if r.firstToken == 0 {
		return "No answer came."
	}
	return fmt.Sprintf("First token after %s · %.1f tokens/s · %d tokens in %s (prompt %d tokens)",
		millis(float64(r.firstToken)/float64(time.Millisecond)), r.tokensPerSecond, r.tokens,
		millis(float64(r.total)/float64(time.Millisecond)), r.promptTokens)
}

// tryChunk is the part of an OpenAI stream chunk read here.
type tryChunk struct {
	Choices []struct {
		Delta struct {
			Content string `json:"content"`
		} `json:"delta"`
	} `json:"choices"`
	Timings *struct {
		PromptN            int     `json:"prompt_n"`
		CacheN             int     `json:"cache_n"`
		PredictedN         int     `json:"predicted_n"`
		PredictedPerSecond float64 `json:"predicted_per_second"`
	} `json:"timings"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// run posts the prompt with stream on and reads the answer as it comes, calling on for every
// comment and piece of text.
func (r tryRequest) run(ctx context.Context, on func(tryEvent)) (tryResult, error) {
	var res tryResult
	body, _ := json.Marshal(map[string]any{
		"model": r.model, "stream": true,
		"messages": []map[string]string{{"role": "user", "content": r.prompt}},
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.base+"/v1/chat/completions", bytes.NewReader(body))
	if err != nil {
		return res, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	if r.key != "" {
		req.Header.Set("Authorization", "Bearer "+r.key)
	}
	sent := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return res, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return res, fmt.Errorf("the router answered %d: %s", resp.StatusCode, errorMessage(raw))
	}
	pieces := 0
	rd := bufio.NewReader(resp.Body)
	for {
		line, err := rd.ReadString('\n')
		line = strings.TrimRight(line, "\r\n")
		switch {
		case strings.HasPrefix(line, ":"):
			if c := strings.TrimSpace(line[1:]); c != "" {
				on(tryEvent{comment: c, elapsed: time.Since(sent)})
			}
		case strings.HasPrefix(line, "data:"):
			data := strings.TrimSpace(line[len("data:"):])
			if data == "[DONE]" {
				break
			}
			var ch tryChunk
			if json.Unmarshal([]byte(data), &ch) != nil {
				break
			}
			if ch.Error != nil {
				return res, errors.New(ch.Error.Message)
			}
			for _, c := range ch.Choices {
				if c.Delta.Content == "" {
					continue
				}
				if res.firstToken == 0 {
					res.firstToken = time.Since(sent)
				}
				pieces++
				on(tryEvent{delta: c.Delta.Content, elapsed: time.Since(sent)})
			}
			if tm := ch.Timings; tm != nil {
				res.tokens, res.tokensPerSecond, res.promptTokens = tm.PredictedN, tm.PredictedPerSecond, tm.PromptN+tm.CacheN
			}
		}
		if err != nil {
			res.total = time.Since(sent)
			if res.tokens == 0 {
				res.tokens = pieces
				if gen := res.total - res.firstToken; res.firstToken > 0 && gen > 0 {
					res.tokensPerSecond = float64(pieces) / gen.Seconds()
				}
			}
			if errors.Is(err, io.EOF) {
				return res, nil
			}
			if ctx.Err() != nil {
				return res, ctx.Err()
			}
			return res, err
		}
	}
}

// errorMessage is the message of an error document, else its text.
func errorMessage(raw []byte) string {
	var doc struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(raw, &doc) == nil && doc.Error.Message != "" {
		return doc.Error.Message
	}
	return strings.TrimSpace(string(raw))
}
