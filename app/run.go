package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"fyne.io/fyne/v2"
	fyneapp "fyne.io/fyne/v2/app"

	_ "github.com/llamatray/llamatray/app/internal/clocale" // before Fyne reads the locale

	"github.com/llamatray/llamatray/app/platform"
	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/envconfig"
	"github.com/llamatray/llamatray/router/service"
)

// Options are what main knows when the desktop app starts.
type Options struct {
	Config     config.Config
	ConfigPath string
	Version    string
	Logger     *slog.Logger
}

// stopTimeout bounds how long Quit waits for the children to stop.
const stopTimeout = 30 * time.Second

// Run starts the desktop app and returns when it quits. A second launch asks the first to show its
// window and returns nil at once. The router not being able to listen, or llama-server missing, do
// not stop the app: it opens and says so.
func Run(ctx context.Context, o Options) error {
	log := cmp.Or(o.Logger, slog.Default())
	inst, err := claimInstance(instanceSocketPath())
	switch {
	case errors.Is(err, errAlreadyRunning):
		log.Info("Llamatray is already running; asked it to show its window")
		return nil
	case err != nil:
		log.Warn("single-instance check unavailable; continuing", "err", err)
	}
	if inst != nil {
		defer inst.Close()
	}

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	svc, err := openService(runCtx, o, log)
	if err != nil {
		return err
	}
	defer closeService(svc, log)

	fa := fyneapp.NewWithID(platform.AppID)
	var uiGone atomic.Bool
	u := newDesktopUI(fa, newServiceBackend(svc), log, o.Version, &uiGone)
	// The tray icon and menu are set before Run, as the system tray needs them at start. A click on
	// the icon shows the models window (with Fyne's tray, through its driver; the window notices:
	// modelsWindow.drawn).
	u.tray = startTray(u)
	if u.tray != nil {
		defer u.tray.close()
	}
	u.apply(u.snap)
	u.hookLifecycle(fa)

	watched := make(chan struct{})
	go func() { u.watch(runCtx); close(watched) }()
	if inst != nil {
		go inst.serve(runCtx, log, func() { u.onUI(u.showModels) })
	}
	// The driver's Quit, as Fyne's own SIGINT and SIGTERM handler quits: when that handler was first,
	// the loop is gone and fyne.Do runs this at once, off the UI thread, where the driver's Quit does
	// nothing (fa.Quit would close the windows of a GLFW already terminated, and panic).
	stopQuit := context.AfterFunc(ctx, func() { u.onUI(fa.Driver().Quit) })
	defer stopQuit()

	log.Info("desktop app started", "listen", u.snap.ListenAddr, "llama_server", u.snap.Server.Path, "models", len(u.snap.Models))
	fa.Run()
	uiGone.Store(true)
	cancel()
	<-watched // no refresh runs while the models are stopped
	log.Info("quitting: stopping every model")
	return nil
}

// openService makes the service and starts it. A router that cannot listen does not stop the app,
// which stays up to say so.
func openService(ctx context.Context, o Options, log *slog.Logger) (*service.Service, error) {
	svc, err := service.New(o.Config, service.Options{ConfigPath: o.ConfigPath, Version: o.Version, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("start llamatray: %w", err)
	}
	if err := svc.Start(ctx); err != nil {
		if svc.ListenErr() == nil {
			return nil, fmt.Errorf("start llamatray: %w", err)
		}
		log.Warn("the router is not listening; the app stays up to say so", "err", err)
	}
	return svc, nil
}

// closeService stops the models, waiting stopTimeout at most.
func closeService(svc *service.Service, log *slog.Logger) {
	stopCtx, done := context.WithTimeout(context.Background(), stopTimeout)
	defer done()
	if err := svc.Stop(stopCtx); err != nil {
		log.Error("stopping the models", "err", err)
	}
}

// newDesktopUI makes the app's UI over b, with the state b has now. Once uiGone is set (Run has
// returned, and the UI thread with it), later UI calls (a background action finishing) are dropped.
func newDesktopUI(fa fyne.App, b Backend, log *slog.Logger, version string, uiGone *atomic.Bool) *ui {
	fillMetadata(fa.Metadata(), version)
	fa.SetIcon(appIcon)
	u := newUI(fa, b, log, systemAutostart())
	u.snap = b.Snapshot()
	u.snap.Autostart = u.auto.enabled()
	u.models = newModelsWindow(u) // its content is built on the first show

	// Work for the UI thread wakes Fyne's loop when it is parked (idle.go), and may let it park after.
	u.loopDo = func(f func()) {
		if !uiGone.Load() {
			fyne.Do(f)
		}
	}
	u.onUI = func(f func()) {
		u.loopDo(func() { f(); u.settle() })
		if u.park != nil {
			u.park.kick() // after the work is queued: a park that the kick ends finds it there
		}
	}
	return u
}

// hookLifecycle has the app's start send the startup notes and show the models window (unless it
// was started at login with nothing to say), and follow which window has the keyboard focus.
func (u *ui) hookLifecycle(fa fyne.App) {
	fa.Lifecycle().SetOnStarted(func() {
		for _, n := range startupNotes(u.snap) {
			u.send(fyne.NewNotification(n.Title, n.Body))
		}
		// Started at login: stay in the tray unless something needs attention.
		if envconfig.Autostart.Get() != "1" || len(startupNotes(u.snap)) > 0 || len(u.snap.Models) == 0 {
			u.showModels()
		}
		u.settle()
	})
	// Which window has the keyboard focus bounds how long Fyne's loop parks (idle.go). Both run on
	// the UI thread, as the loop reads the X server's focus events.
	fa.Lifecycle().SetOnEnteredForeground(func() { u.front = true })
	fa.Lifecycle().SetOnExitedForeground(func() { u.front = false })
}

// fillMetadata completes the app metadata (packaged by the fyne tool from FyneApp.toml, or empty
// in a plain go build) with the name, icon and build version.
func fillMetadata(m fyne.AppMetadata, version string) {
	if m.ID == "" {
		m.ID = platform.AppID
	}
	if m.Name == "" {
		m.Name = "Llamatray"
	}
	if m.Icon == nil {
		m.Icon = appIcon
	}
	if version != "" && version != "dev" {
		m.Version = version
	}
	fyneapp.SetMetadata(m)
}
