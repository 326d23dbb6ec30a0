package app

import (
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"
)

// logTail is how many lines of a model's output the log view shows.
const logTail = 400

// logEvery is how often an open log view re-reads the model's output.
const logEvery = time.Second

// logWindow is a live view of one model's llama-server output.
type logWindow struct {
	win    fyne.Window
	text   *widget.TextGrid
	scroll *container.Scroll
	follow *widget.Check
	stop   chan struct{} // closed when the window closes
	last   string
}

// showLogs opens (or brings forward) the log view of a model. It refreshes while open.
func (u *ui) showLogs(id string) {
	if lw, ok := u.logs[id]; ok {
		raise(lw.win)
		return
	}
	lw := &logWindow{win: u.newWindow("Logs — "+id, fyne.Size{}), text: widget.NewTextGrid(), stop: make(chan struct{})}
	lw.scroll = container.NewScroll(lw.text)
	lw.follow = widget.NewCheck("Follow", nil)
	lw.follow.SetChecked(true)
	copyAll := widget.NewButton("Copy all", func() { u.app.Clipboard().SetContent(lw.last) })
	lw.win.SetContent(container.NewBorder(nil, container.NewHBox(lw.follow, copyAll), nil, nil, lw.scroll))
	lw.win.Resize(fyne.NewSize(860, 480))
	lw.win.SetOnClosed(func() {
		close(lw.stop)
		delete(u.logs, id)
		u.settle()
	})
	u.logs[id] = lw
	lw.win.Show() // first, so that following scrolls a laid-out view
	lw.set(u.b.Logs(id))
	go pollUntil(u, lw.stop, logEvery, func() []string { return u.b.Logs(id) }, lw.set)
}

// set shows the tail of lines, scrolled to the end while Follow is on.
func (lw *logWindow) set(lines []string) {
	if len(lines) > logTail {
		lines = lines[len(lines)-logTail:]
	}
	text := strings.Join(lines, "\n")
	if len(lines) == 0 {
		text = "(no output yet: the model has not run since Llamatray started)"
	}
	if text == lw.last {
		return
	}
	lw.last = text
	lw.text.SetText(text)
	if lw.follow.Checked {
		lw.scroll.ScrollToBottom()
	}
}
