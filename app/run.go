package app

import (
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
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
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

	svc, err := service.New(o.Config, service.Options{ConfigPath: o.ConfigPath, Version: o.Version, Logger: log})
	if err != nil {
		return fmt.Errorf("start llamatray: %w", err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := svc.Start(runCtx); err != nil {
		if svc.ListenErr() == nil {
			return fmt.Errorf("start llamatray: %w", err)
		}
		log.Warn("the router is not listening; the app stays up to say so", "err", err)
	}
	defer func() {
		stopCtx, done := context.WithTimeout(context.Background(), stopTimeout)
		defer done()
		if err := svc.Stop(stopCtx); err != nil {
			log.Error("stopping the models", "err", err)
		}
	}()

	fa := fyneapp.NewWithID(platform.AppID)
	fillMetadata(fa.Metadata(), o.Version)
	fa.SetIcon(appIcon)
	b := newServiceBackend(svc)
	u := newUI(fa, b, log, systemAutostart())
	u.snap = b.Snapshot()
	u.snap.Autostart = u.auto.enabled()
	u.models = newModelsWindow(u) // its content is built on the first show

	// After Run returns the UI thread is gone: later UI calls (a background action finishing) are dropped.
	// Work for the UI thread wakes Fyne's loop when it is parked (idle.go), and may let it park after.
	var uiGone atomic.Bool
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

	// The tray icon and menu are set before Run, as the system tray needs them at start. A click on
	// the icon shows the models window (with Fyne's tray, through its driver; the window notices:
	// modelsWindow.drawn).
	u.tray = startTray(u)
	if u.tray != nil {
		defer u.tray.close()
	}
	u.apply(u.snap)
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

	log.Info("desktop app started", "listen", u.snap.ListenAddr, "llama_server", u.snap.ServerPath, "models", len(u.snap.Models))
	fa.Run()
	uiGone.Store(true)
	cancel()
	<-watched // no refresh runs while the models are stopped
	log.Info("quitting: stopping every model")
	return nil
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
