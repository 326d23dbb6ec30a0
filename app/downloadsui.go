package app

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/llamatray/llamatray/router/hub"
)

// downloadsSection is the models window's Downloads part: every pull running, paused or failed
// (partials from an earlier run too), with its progress, speed and time left, and Pause, Resume
// and Cancel. It is empty, and takes no room, when there is none.
type downloadsSection struct {
	u   *ui
	box *fyne.Container
	key string // what is shown, to leave an unchanged section alone
}

func newDownloadsSection(u *ui) *downloadsSection {
	return &downloadsSection{u: u, box: container.NewVBox()}
}

func (d *downloadsSection) update(s Snapshot) {
	key := fmt.Sprint(s.Downloads)
	if key == d.key {
		return
	}
	d.key = key
	if !d.u.b.Offers().Hub || len(s.Downloads) == 0 {
		d.box.Objects = nil
		d.box.Refresh()
		return
	}
	h := d.u.b
	title := sectionTitle("Downloads")
	objs := []fyne.CanvasObject{title}
	for _, dl := range s.Downloads {
		objs = append(objs, d.row(h, dl))
	}
	d.box.Objects = append(objs, widget.NewSeparator())
	d.box.Refresh()
}

// row is one download: its name and state in words, a bar, and what can be done.
func (d *downloadsSection) row(h Backend, dl hub.PullStatus) fyne.CanvasObject {
	name := dl.Model
	bar := widget.NewProgressBar()
	_, kept := pullTrouble(dl.Error)
	if dl.Progress.Total > 0 && (kept || dl.State != hub.StateFailed) {
		bar.SetValue(float64(dl.Progress.Done) / float64(dl.Progress.Total))
	}
	line := wrapLabel(downloadText(dl))
	var buttons []fyne.CanvasObject
	act := func(label string, icon fyne.Resource, what string, fn func() error) {
		b := widget.NewButtonWithIcon(label, icon, nil)
		b.OnTapped = func() {
			b.Disable() // until fn returns: the row is rebuilt when the state changes, and not when it stays
			d.u.background(what+" "+name, func() error {
				defer d.u.onUI(b.Enable)
				return fn()
			})
		}
		buttons = append(buttons, b)
	}
	switch dl.State {
	case hub.StateDownloading, "":
		act("Pause", theme.MediaPauseIcon(), "Pause", func() error { h.PausePull(name); return nil })
	case hub.StatePaused, hub.StateFailed:
		label, icon := "Resume", theme.MediaPlayIcon()
		if dl.State == hub.StateFailed {
			label, icon = "Retry", theme.ViewRefreshIcon() // from what came, as Resume does
		}
		act(label, icon, label, func() error {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			return h.ResumePull(ctx, name)
		})
	}
	if dl.State == hub.StateFailed && pullGated(dl.Error) {
		buttons = append(buttons, widget.NewButtonWithIcon("Hugging Face token…", theme.SettingsIcon(), d.u.showHubToken))
	}
	act("Cancel", theme.CancelIcon(), "Cancel", func() error { return h.DiscardPull(name) })
	head := boldLabel(name)
	body := container.NewVBox(head, bar, line)
	if dl.State == hub.StateFailed && !kept {
		body = container.NewVBox(head, line) // nothing kept: no bar to show
	}
	return container.NewBorder(nil, nil, nil, container.NewVBox(container.NewHBox(buttons...)), body)
}

// downloadText is a download's state in words: "42% of 4.1 GiB · 12 MiB/s · 3 min left".
func downloadText(d hub.PullStatus) string {
	p := d.Progress
	var parts []string
	trouble, kept := pullTrouble(d.Error)
	if d.State == hub.StateFailed && !kept {
		return trouble // nothing was kept: no share of it to give
	}
	if p.Total > 0 {
		parts = append(parts, fmt.Sprintf("%d%% of %s", p.Done*100/p.Total, humanBytes(p.Total)))
	}
	switch d.State {
	case hub.StateDownloading, "":
		if p.Rate > 0 {
			parts = append(parts, humanBytes(int64(p.Rate))+"/s")
		}
		if p.Left > 0 {
			parts = append(parts, leftText(p.Left))
		}
		if len(parts) == 0 {
			parts = append(parts, "starting")
		}
	case hub.StatePaused:
		parts = append(parts, "paused: "+humanBytes(p.Done)+" kept on disk; Resume goes on from there")
	case hub.StateFailed:
		parts = append(parts, trouble)
	}
	return strings.Join(parts, " · ")
}

// leftText is a time left for people: "40 s left", "3 min left", "2 h 5 min left".
func leftText(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%d s left", int(d.Seconds()+0.5))
	case d < time.Hour:
		return fmt.Sprintf("%d min left", int(d.Minutes()+0.5))
	}
	return fmt.Sprintf("%d h %d min left", int(d.Hours()), int(d.Minutes())%60)
}

// pullTrouble is why a download stopped, as one or two sentences a person can act on, from the
// Hub's error (no addresses, no Go error chains), and whether what came is kept for Retry.
func pullTrouble(err string) (text string, kept bool) {
	has := func(words ...string) bool { return mentions(err, words...) }
	const goOn = " What came is kept; Retry goes on from there."
	switch {
	case err == "":
		return "Stopped." + goOn, true
	case has("sha256 mismatch", "checksum"):
		return "What came does not match the checksum the Hub lists, so it was deleted: Retry downloads it again.", false
	case pullGated(err):
		return "This model is gated: accept its terms on its Hub page, paste a token with access in Settings' Hugging Face token field, then Retry.", true
	case has("not found on the hugging face hub", "http 404"):
		return "The Hub no longer has this file: Cancel, and pick another model or quant.", false
	case has("no space left", "disk quota"):
		return "The disk is full: free some room, then Retry." + goOn, true
	case has("does not resolve", "no such host"):
		return "The Hugging Face Hub cannot be reached: is this computer offline?" + goOn, true
	case has("refused"):
		return "The Hub refused the connection: a proxy or firewall may be in the way." + goOn, true
	case has("timeout", "did not answer in time", "deadline exceeded"):
		return "The Hub stopped answering: the network is slow or down." + goOn, true
	case has("certificate"):
		return "The Hub's certificate is not trusted: a proxy may be intercepting HTTPS." + goOn, true
	case has("cannot reach", "dial tcp", "connection reset", "broken pipe", "eof", "network is unreachable"):
		return "The connection to the Hub broke off." + goOn, true
	}
	// Something else: its words, without addresses or the Go error chain behind them.
	msg := urlPattern.ReplaceAllString(err, "the Hub")
	if i := strings.Index(msg, " ("); i > 0 {
		msg = msg[:i]
	}
	msg = strings.TrimSuffix(strings.TrimSpace(msg), ".")
	return upperFirst(msg) + "." + goOn, true
}

// pullGated reports whether the Hub refused a download for want of access (401, 403: a gated or
// private repo), which a token with access in Settings fixes.
func pullGated(err string) bool {
	return mentions(err, "gated or private", "no access", "http 401", "http 403")
}

// mentions reports whether err, in any case, contains one of words (lower case).
func mentions(err string, words ...string) bool {
	low := strings.ToLower(err)
	return slices.ContainsFunc(words, func(w string) bool { return strings.Contains(low, w) })
}

// urlPattern matches a web address in an error.
var urlPattern = regexp.MustCompile(`"?https?://[^\s"]+"?`)

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	r := []rune(s)
	r[0] = unicode.ToUpper(r[0])
	return string(r)
}
