package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/llamatray/llamatray/router/hub"
	"github.com/llamatray/llamatray/router/releases"
)

// serverInstall is the "Install llama-server" button of the llama-server-not-found banner, with its
// progress bar and a status line saying which build was chosen and why. Its fields are used on the
// UI thread only.
type serverInstall struct {
	u       *ui
	button  *widget.Button
	bar     *widget.ProgressBar
	status  *widget.Label
	pick    *widget.Select // the build to install: the one chosen here first, then the others
	assets  []string       // pick's options' asset names, in order
	box     *fyne.Container
	running bool
	stop    *widget.Button     // Cancel, shown while an install runs
	cancel  context.CancelFunc // ends the running install
	chosen  string             // "llama.cpp b7100 (cpu, 12 MiB)", once the build is chosen
}

// serverInstallPanel returns the install panel for the banner, made once so that an install in
// progress keeps its bar when the banners are rebuilt; nil when the backend cannot install.
func (m *modelsWindow) serverInstallPanel() fyne.CanvasObject {
	if m.install == nil {
		if !m.u.b.Offers().InstallBuild {
			return nil
		}
		si := &serverInstall{u: m.u, bar: widget.NewProgressBar(), status: wrapLabel("")}
		si.button = widget.NewButtonWithIcon("Install llama-server", theme.DownloadIcon(), si.start)
		si.button.Importance = widget.HighImportance
		si.pick = widget.NewSelect(nil, nil)
		si.stop = widget.NewButtonWithIcon("Cancel", theme.CancelIcon(), func() {
			if si.cancel != nil {
				si.cancel()
				si.stop.Disable()
			}
		})
		si.stop.Hide()
		si.bar.Hide()
		si.status.Hide()
		si.pick.Hide()
		si.box = container.NewVBox(si.status, si.bar) // the button, Cancel and the pick are on the banner's line
		m.install = si
		go si.plan()
	}
	return m.install.box
}

// plan asks which archive of the latest release fits this machine, and offers the others.
func (si *serverInstall) plan() {
	rel, c, err := si.u.b.PlanBuild(context.Background(), releases.Request{Build: releases.Latest})
	if err != nil {
		return // the install says why, if it fails the same way
	}
	opts := []string{fmt.Sprintf("%s for this machine: %s", c.Label(), c.Asset.Name)}
	assets := []string{c.Asset.Name}
	for _, o := range c.Others {
		opts = append(opts, fmt.Sprintf("%s: %s", o.Label(), o.Asset.Name))
		assets = append(assets, o.Asset.Name)
	}
	why := fmt.Sprintf("llama.cpp %s, %s for this machine: %s. Another build can be picked above.", rel.TagName, humanBytes(c.Asset.Size), c.Reason)
	si.u.onUI(func() {
		if si.running {
			return
		}
		si.assets = assets
		si.pick.Options = opts
		si.pick.SetSelectedIndex(0)
		si.pick.Show()
		si.setStatus(why)
	})
}

// asset is the archive picked, "" for the one chosen here.
func (si *serverInstall) asset() string {
	if i := si.pick.SelectedIndex(); i > 0 && i < len(si.assets) {
		return si.assets[i]
	}
	return ""
}

// start installs the latest build for this machine, off the UI thread.
func (si *serverInstall) start() {
	if si.running {
		return
	}
	si.running = true
	si.button.Disable()
	si.bar.SetValue(0)
	si.bar.Show()
	si.pick.Disable()
	si.setStatus("Looking for llama.cpp's latest build…")
	req := releases.Request{Build: releases.Latest, Asset: si.asset()}
	ctx, cancel := context.WithCancel(context.Background())
	si.cancel = cancel
	si.stop.Enable()
	si.stop.Show()
	go func() {
		defer cancel()
		b, err := si.u.b.InstallBuild(ctx, req, func(p releases.Progress) {
			si.u.onUI(func() { si.progress(p) })
		})
		note := ""
		if s := si.u.b.Snapshot(); err == nil && (s.Server.Source == "config" || s.Server.Source == "env") {
			note = " The llama-server set in Settings (or $LLAMA_SERVER) is still the one used: clear it to use this build."
		}
		si.u.onUI(func() { si.finish(b, note, err) })
	}()
}

func (si *serverInstall) progress(p releases.Progress) {
	switch p.Phase {
	case releases.PhaseChosen:
		si.chosen = fmt.Sprintf("llama.cpp %s (%s, %s)", p.Build, p.Backend, humanBytes(p.Total))
		si.setStatus(fmt.Sprintf("Downloading %s: %s.", si.chosen, p.Reason))
	case releases.PhaseDownloading:
		if p.Total > 0 {
			si.bar.SetValue(float64(p.Done) / float64(p.Total))
		}
		d := hub.PullStatus{State: hub.StateDownloading, Progress: hub.Progress{Done: p.Done, Total: p.Total, Rate: p.BytesPerSecond, Left: time.Duration(p.ETASeconds * float64(time.Second))}}
		si.setStatus("Downloading " + si.chosen + ": " + downloadText(d))
	case releases.PhaseVerified:
		si.bar.SetValue(1)
		si.setStatus("Verified " + p.Asset + " (sha256). Unpacking…")
	}
}

func (si *serverInstall) finish(b releases.Build, note string, err error) {
	si.running = false
	si.cancel = nil
	si.stop.Hide()
	si.button.Enable()
	si.pick.Enable()
	if errors.Is(err, context.Canceled) {
		si.bar.Hide()
		si.setStatus("Install cancelled; the builds are as they were.")
		return
	}
	if err != nil {
		si.bar.Hide()
		si.setStatus("Install failed: " + err.Error())
		return
	}
	si.bar.SetValue(1)
	version := ""
	if b.Version != "" {
		version = ", version " + b.Version
	}
	done := fmt.Sprintf("Installed llama.cpp %s (%s%s): %s. Models load with it now; no restart is needed.%s", b.Build, b.Backend, version, b.Reason, note)
	si.setStatus(done)
	if m := si.u.models; m != nil {
		m.setStatus(done) // the banner goes with the next snapshot; this line stays to say it worked
	}
	si.u.send(fyne.NewNotification("llama-server installed", fmt.Sprintf("llama.cpp %s (%s): models load with it now.", b.Build, b.Backend)))
	si.u.refresh.Kick() // the banner goes once the snapshot finds llama-server
}

func (si *serverInstall) setStatus(text string) {
	si.status.SetText(text)
	si.status.Show()
}

// lookAgain searches llama-server again, for one installed since Llamatray started: found, the
// banner goes at the next snapshot; no restart is needed.
func (m *modelsWindow) lookAgain() {
	m.setStatus("Looking for llama-server…")
	m.u.background("Look for llama-server", func() error {
		path := m.u.b.FindLlamaServer()
		m.u.onUI(func() {
			if path == "" {
				m.setStatus("Still no llama-server: install it as the banner says, or pick one with Locate….")
				return
			}
			m.setStatus("Found llama-server at " + path + "; models load with it now.")
		})
		return nil
	})
}
