package app

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/llamatray/llamatray/router/fit"
	"github.com/llamatray/llamatray/router/hub"
)

// getModelsWindow is "Get models…": search the Hugging Face Hub, pick a repo, see its quants
// with sizes and fit badges, download one with progress, cancel. Its fields are used on the UI
// thread only; Hub calls run on their own goroutines and report back through onUI.
type getModelsWindow struct {
	u   *ui
	win fyne.Window

	search    *widget.Entry
	status    *widget.Label
	results   *fyne.Container // one button per repo
	repoHead  *widget.Label
	quants    *fyne.Container // one row per quant
	pullLine  *widget.Label
	progress  *widget.ProgressBar
	cancel    *widget.Button
	tryIt     *widget.Button    // Try it… with the model just downloaded
	starters  []starterSlot     // the starters' Download buttons
	downloads *downloadsSection // running, paused and failed downloads

	pulling    string // the model being downloaded, "" when none
	ready      string // the model last downloaded here, "" when none
	searched   bool   // a search ran: the starter list no longer replaces the results
	stopEvents func()
}

func (u *ui) showGetModels() {
	if !u.b.Offers().Hub {
		return
	}
	if u.getModels != nil {
		raise(u.getModels.win)
		return
	}
	g := newGetModelsWindow(u)
	u.getModels = g
	g.win.SetOnClosed(func() {
		g.stopEvents()
		u.getModels = nil
	})
	g.win.Show()
	g.win.Canvas().Focus(g.search)
}

// getModelsButton is the "Get models…" button, or nil when the backend has no Hub.
func (u *ui) getModelsButton() *widget.Button {
	if !u.b.Offers().Hub {
		return nil
	}
	return widget.NewButtonWithIcon("Get models…", theme.DownloadIcon(), u.showGetModels)
}

func newGetModelsWindow(u *ui) *getModelsWindow {
	g := &getModelsWindow{u: u, win: u.newWindow("Get models", fyne.NewSize(860, 600))}
	g.search = widget.NewEntry()
	g.search.SetPlaceHolder("Search the Hugging Face Hub for GGUF models, e.g. “qwen2.5 instruct”")
	g.search.OnSubmitted = func(string) { g.runSearch() }
	find := widget.NewButtonWithIcon("Search", theme.SearchIcon(), g.runSearch)
	g.status = wrapLabel("")
	g.results = container.NewVBox()
	g.repoHead = boldLabel("")
	g.repoHead.Truncation = fyne.TextTruncateEllipsis // a long repo name does not widen the window
	hint := tinted(wrapLabel("Pick a model on the left: its files (quants) show here, with their sizes and how they fit this machine."), widget.LowImportance)
	g.quants = container.NewVBox(hint) // until a repo is opened
	// A download's error can be long: it wraps, the window keeps its width.
	g.pullLine = wrapLabel("")
	g.progress = widget.NewProgressBar()
	g.cancel = widget.NewButtonWithIcon("Cancel", theme.CancelIcon(), g.cancelPull)
	g.tryIt = widget.NewButtonWithIcon("Try it…", theme.MailSendIcon(), func() { g.u.showTryIt(g.ready) })
	g.tryIt.Importance = widget.HighImportance
	g.setPulling("", "")

	events, stop := u.b.PullEvents()
	done := make(chan struct{})
	g.stopEvents = func() { stop(); close(done) }
	go func() { // ends when the window closes
		for {
			select {
			case ev := <-events:
				u.onUI(func() { g.event(ev) })
			case <-done:
				return
			}
		}
	}()

	g.downloads = newDownloadsSection(u) // every download, wherever it was started: this window's, the CLI's, an earlier run's
	g.downloads.update(u.snap)
	top := container.NewVBox(container.NewBorder(nil, nil, nil, find, g.search), g.status, g.downloads.box)
	bottom := container.NewVBox(widget.NewSeparator(), container.NewBorder(nil, nil, nil, g.tryIt, g.pullLine),
		container.NewBorder(nil, nil, nil, g.cancel, g.progress))
	split := container.NewHSplit(container.NewVScroll(g.results), container.NewBorder(g.repoHead, nil, nil, nil, container.NewVScroll(g.quants)))
	split.Offset = 0.4
	g.win.SetContent(container.NewBorder(top, bottom, nil, nil, split))
	g.status.SetText("Loading the models suggested to start with…")
	go g.loadStarters()
	return g
}

// loadStarters shows the starter list, checked against the Hub, until a search shows results.
func (g *getModelsWindow) loadStarters() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	list, err := g.u.b.HubStarters(ctx)
	g.u.onUI(func() {
		loading := strings.HasPrefix(g.status.Text, "Loading the models suggested")
		if g.searched || err != nil || len(list) == 0 {
			// A search came first, or the Hub is out of reach (a search will say so too).
			if loading && err != nil {
				trouble, _ := pullTrouble(err.Error())
				g.status.SetText("The suggested models could not be listed. " + strings.TrimSuffix(trouble, " What came is kept; Retry goes on from there."))
			} else if loading {
				g.status.SetText("Type a name, or paste ORG/REPO:QUANT or a Hugging Face link.")
			}
			return
		}
		objs := []fyne.CanvasObject{boldLabel("To start with")}
		g.starters = nil
		for _, s := range list {
			ref, _ := hub.ParseRef(s.Name)
			b := widget.NewButton(shortName(s.Name), func() { g.openRepo(ref.Repo) })
			b.Alignment = widget.ButtonAlignLeading
			about := captionLabel(starterText(s))
			if imp := fitImportance(s.Fit); imp != widget.SuccessImportance {
				about.Importance = imp // only a warning is coloured: a list of green text reads as none
			}
			objs = append(objs, container.NewBorder(nil, nil, nil, g.starterAction(ref.Repo, s.QuantFit), b), about)
		}
		g.results.Objects = objs
		g.results.Refresh()
		if g.status.Text == "" || loading {
			g.status.SetText("Type a name, or paste ORG/REPO:QUANT or a Hugging Face link; or pick one to start with.")
		}
	})
}

// starterSlot is a starter's button: Download, then Try it… once ready.
type starterSlot struct {
	model string
	b     *widget.Button
	ready bool
}

// starterReady turns the starter's Download of model, if there is one, into its Try it….
func (g *getModelsWindow) starterReady(model string) {
	for i, s := range g.starters {
		if strings.EqualFold(s.model, model) {
			g.starters[i].ready = true
			g.tryItWith(s.b, s.model)
			s.b.Enable()
		}
	}
}

// tryItWith makes b the Try it… of model, which is on this machine.
func (g *getModelsWindow) tryItWith(b *widget.Button, model string) {
	b.SetText("Try it…")
	b.SetIcon(theme.MailSendIcon())
	b.OnTapped = func() { g.u.showTryIt(model) }
}

// starterAction is a starter's one-click Download (the quant it names, without opening its repo),
// or Try it… once it is on this machine; nil for a gated one this token may not download.
func (g *getModelsWindow) starterAction(repo string, q hub.QuantFit) fyne.CanvasObject {
	if q.Downloaded {
		b := widget.NewButton("", nil)
		g.tryItWith(b, q.Model)
		return b
	}
	if q.NoAccess != "" {
		return nil
	}
	b := widget.NewButtonWithIcon("Download", theme.DownloadIcon(), nil)
	b.OnTapped = func() {
		g.openRepo(repo)
		g.startPull(q.Model)
	}
	if g.running(q.Model) {
		b.Disable()
	}
	g.starters = append(g.starters, starterSlot{model: q.Model, b: b})
	return b
}

// running reports whether model is being downloaded, from this window or elsewhere.
func (g *getModelsWindow) running(model string) bool {
	return strings.EqualFold(model, g.pulling) || slices.ContainsFunc(g.u.snap.Downloads, func(d hub.PullStatus) bool {
		return strings.EqualFold(d.Model, model) && d.State == hub.StateDownloading
	})
}

func (g *getModelsWindow) runSearch() {
	text := strings.TrimSpace(g.search.Text)
	if text == "" {
		return
	}
	if ref, err := hub.ParsePasted(text); err == nil { // ORG/REPO[:QUANT] or a Hub link: that repo
		g.status.SetText(fmt.Sprintf("%s: its files, read from the Hub.", ref.Repo))
		g.openRepo(ref.Repo)
		return
	}
	g.searched = true
	g.status.SetText("Searching…")
	go func() {
		var repos []hub.Repo
		var err error
		for try := 1; ; try++ { // a network failure is tried once more, visibly, before it is shown
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			repos, err = g.u.b.SearchHub(ctx, text)
			cancel()
			if !errors.Is(err, hub.ErrUnreachable) || try == searchTries {
				break
			}
			g.u.onUI(func() { g.status.SetText(fmt.Sprintf("%v. Trying again (%d of %d)…", err, try+1, searchTries)) })
			t := time.NewTimer(2 * time.Second)
			<-t.C
		}
		g.u.onUI(func() { g.showResults(text, repos, err) })
	}()
}

// searchTries bounds the tries of a search the network fails.
const searchTries = 2

func (g *getModelsWindow) showResults(text string, repos []hub.Repo, err error) {
	g.results.Objects = nil
	switch {
	case err != nil:
		g.status.SetText("Search failed: " + err.Error())
		g.results.Objects = append(g.results.Objects, widget.NewButtonWithIcon("Retry", theme.ViewRefreshIcon(), g.runSearch))
	case len(repos) == 0:
		g.status.SetText(fmt.Sprintf("No GGUF models match “%s”.", text))
	default:
		g.status.SetText(fmt.Sprintf("%s for “%s”. Pick one to see its files.", plural(len(repos), "repo"), text))
	}
	for _, r := range repos {
		b := widget.NewButton(shortName(r.ID), func() { g.openRepo(r.ID) })
		b.Alignment = widget.ButtonAlignLeading
		about := captionLabel(repoLabel(r))
		if r.Gated {
			about.Importance = widget.WarningImportance
		}
		g.results.Objects = append(g.results.Objects, b, about)
	}
	g.results.Refresh()
}

// openRepo lists a repo's quants with their fit badges (headers read, nothing downloaded).
func (g *getModelsWindow) openRepo(repo string) {
	g.repoHead.SetText(repo)
	g.quants.Objects = []fyne.CanvasObject{widget.NewLabel("Reading the files and their headers…")}
	g.quants.Refresh()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		qs, err := g.u.b.HubQuants(ctx, repo)
		g.u.onUI(func() { g.showQuants(repo, qs, err) })
	}()
}

func (g *getModelsWindow) showQuants(repo string, qs []hub.QuantFit, err error) {
	if g.repoHead.Text != repo {
		return // another repo was opened meanwhile
	}
	g.quants.Objects = nil
	if err != nil {
		g.quants.Objects = append(g.quants.Objects, wrapLabel(err.Error()), widget.NewButtonWithIcon("Retry", theme.ViewRefreshIcon(), func() { g.openRepo(repo) }))
	}
	if len(qs) > 0 && qs[0].NoAccess != "" {
		g.quants.Objects = append(g.quants.Objects, tinted(wrapLabel(qs[0].NoAccess+". Then open this repo again."), widget.WarningImportance))
	}
	if err == nil && len(qs) == 0 {
		g.quants.Objects = append(g.quants.Objects, widget.NewLabel("This repo has no GGUF model files."))
	}
	for _, q := range qs {
		g.quants.Objects = append(g.quants.Objects, g.quantRow(q)...)
	}
	g.quants.Refresh()
}

// quantRow is one quant of a repo: its name, size and fit badge with Download (or Downloaded), why
// it fits as it does, and a separator.
func (g *getModelsWindow) quantRow(q hub.QuantFit) []fyne.CanvasObject {
	name := boldLabel(q.Name)
	detail := humanBytes(q.Size)
	if len(q.Files) > 1 {
		detail += fmt.Sprintf(" in %d files", len(q.Files))
	}
	if q.Mmproj != nil {
		detail += " + vision projector"
	}
	badge := widget.NewLabel(fitText(q))
	badge.Importance = fitImportance(q.Fit)
	var action fyne.CanvasObject = widget.NewLabel("Downloaded")
	if !q.Downloaded {
		b := widget.NewButtonWithIcon("Download", theme.DownloadIcon(), nil)
		b.OnTapped = func() {
			b.Disable()
			g.startPull(q.Model)
		}
		if g.running(q.Model) {
			b.Disable() // it is downloading: the Downloads above say how far
		}
		if q.Fit == fit.TooLarge {
			b.Importance = widget.LowImportance
		}
		if q.NoAccess != "" {
			b.Disable() // gated, and this token has no access: the Hub would refuse
		}
		action = b
	}
	out := []fyne.CanvasObject{container.NewBorder(nil, nil, nil, action, container.NewHBox(name, widget.NewLabel(detail), badge))}
	if reason := fitReason(q); reason != "" {
		out = append(out, tinted(wrapLabel(reason), widget.LowImportance))
	}
	return append(out, widget.NewSeparator())
}

// startPull starts a download; its progress arrives as events.
func (g *getModelsWindow) startPull(model string) {
	g.setPulling(model, "Starting the download of "+model+"…")
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		st, err := g.u.b.Pull(ctx, model)
		g.u.onUI(func() {
			if err != nil {
				trouble, _ := pullTrouble(err.Error())
				g.setPulling("", "Download of "+model+" did not start. "+trouble)
				g.reopen()
				return
			}
			g.pulling = st.Model
		})
	}()
}

func (g *getModelsWindow) cancelPull() {
	if g.pulling == "" {
		return
	}
	name := g.pulling
	g.pullLine.SetText("Cancelling " + name + "…")
	go g.u.b.CancelPull(name)
}

// setPulling shows the download area for model ("" hides the bar and Cancel) with a line of text.
func (g *getModelsWindow) setPulling(model, text string) {
	g.pulling = model
	g.tryIt.Hide() // shown again when a download is ready
	for _, s := range g.starters {
		switch {
		case s.ready:
		case strings.EqualFold(s.model, model):
			s.b.Disable() // the others stay offered: downloads run side by side
		default:
			s.b.Enable()
		}
	}
	g.pullLine.SetText(text)
	showIf(g.pullLine, text != "")
	g.progress.SetValue(0)
	showIf(g.progress, model != "")
	showIf(g.cancel, model != "")
}

func (g *getModelsWindow) event(ev hub.Event) {
	if g.pulling == "" || !strings.EqualFold(ev.Model, g.pulling) {
		return
	}
	switch ev.State {
	case hub.StateDownloading:
		g.pullLine.SetText(pullText(ev))
		if ev.Progress.Total > 0 {
			g.progress.SetValue(float64(ev.Progress.Done) / float64(ev.Progress.Total))
		}
	case hub.StateDownloaded:
		g.setPulling("", ev.Model+" is downloaded, verified and ready: use it under that name.")
		g.ready = ev.Model
		g.tryIt.Show()
		g.starterReady(ev.Model)
		g.u.refresh.Kick()
		g.reopen()
	case hub.StateCancelled:
		g.setPulling("", "Download of "+ev.Model+" cancelled; nothing was kept.")
		g.reopen()
	case hub.StateFailed:
		trouble, _ := pullTrouble(ev.Error)
		g.setPulling("", "Download of "+ev.Model+" failed. "+trouble)
		g.reopen()
	}
}

// reopen lists the open repo's quants again (their Download buttons enabled again).
func (g *getModelsWindow) reopen() {
	if repo := g.repoHead.Text; repo != "" {
		g.openRepo(repo)
	}
}
