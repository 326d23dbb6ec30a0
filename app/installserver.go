package app

import (
	"context"
	"fmt"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/llamatray/llamatray/router/releases"
)

// llamaServerInstaller is what the Install llama-server button needs from the backend; the service
// backend has it (a backend without it shows no button).
type llamaServerInstaller interface {
	// InstallBuild downloads, verifies and unpacks llama.cpp's build for this machine and makes the
	// service use it; progress is called off the UI thread.
	InstallBuild(ctx context.Context, req releases.Request, progress func(releases.Progress)) (releases.Build, error)
}

// InstallBuild installs a llama.cpp release build through the service.
func (sb *serviceBackend) InstallBuild(ctx context.Context, req releases.Request, progress func(releases.Progress)) (releases.Build, error) {
	return sb.svc.InstallBuild(ctx, req, progress)
}

// serverInstall is the "Install llama-server" button of the llama-server-not-found banner, with its
// progress bar and a status line saying which build was chosen and why. Its fields are used on the
// UI thread only.
type serverInstall struct {
	u       *ui
	inst    llamaServerInstaller
	button  *widget.Button
	bar     *widget.ProgressBar
	status  *widget.Label
	box     *fyne.Container
	running bool
}

// serverInstallPanel returns the install panel for the banner, made once so that an install in
// progress keeps its bar when the banners are rebuilt; nil when the backend cannot install.
func (m *modelsWindow) serverInstallPanel() fyne.CanvasObject {
	if m.install == nil {
		inst, ok := m.u.b.(llamaServerInstaller)
		if !ok {
			return nil
		}
		si := &serverInstall{u: m.u, inst: inst, bar: widget.NewProgressBar(), status: widget.NewLabel("")}
		si.button = widget.NewButtonWithIcon("Install llama-server", theme.DownloadIcon(), si.start)
		si.button.Importance = widget.HighImportance
		si.status.Wrapping = fyne.TextWrapWord
		si.bar.Hide()
		si.status.Hide()
		si.box = container.NewBorder(nil, nil, si.button, nil, container.NewVBox(si.status, si.bar))
		m.install = si
	}
	return m.install.box
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
	si.setStatus("Looking for llama.cpp's latest build…")
	go func() {
		b, err := si.inst.InstallBuild(context.Background(), releases.Request{Build: releases.Latest}, func(p releases.Progress) {
			si.u.onUI(func() { si.progress(p) })
		})
		si.u.onUI(func() { si.finish(b, err) })
	}()
}

func (si *serverInstall) progress(p releases.Progress) {
	switch p.Phase {
	case releases.PhaseChosen:
		si.setStatus(fmt.Sprintf("Downloading llama.cpp %s (%s, %s): %s.", p.Build, p.Backend, humanBytes(p.Total), p.Reason))
	case releases.PhaseDownloading:
		if p.Total > 0 {
			si.bar.SetValue(float64(p.Done) / float64(p.Total))
		}
	case releases.PhaseVerified:
		si.bar.SetValue(1)
		si.setStatus("Verified " + p.Asset + " (sha256). Unpacking…")
	}
}

func (si *serverInstall) finish(b releases.Build, err error) {
	si.running = false
	si.button.Enable()
	if err != nil {
		si.bar.Hide()
		si.setStatus("Install failed: " + err.Error())
		return
	}
	si.bar.SetValue(1)
	si.setStatus(fmt.Sprintf("Installed llama.cpp %s (%s).", b.Build, b.Backend))
	si.u.refresh.Kick() // the banner goes once the snapshot finds llama-server
}

func (si *serverInstall) setStatus(text string) {
	si.status.SetText(text)
	si.status.Show()
}
