package app

import (
	"context"
	"log/slog"
	"net/url"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/theme"

	"github.com/llamatray/llamatray/app/platform"
	"github.com/llamatray/llamatray/assets"
	"github.com/llamatray/llamatray/router/hub"
)

// refreshEvery bounds how often the menu and windows are rebuilt from engine events (4 per second).
const refreshEvery = 250 * time.Millisecond

// pollEvery refreshes measured memory and "last used" labels, which change without events. It runs
// only while something shows them: a window, or a running model's entry in the tray menu. An idle
// app in the tray is woken by nothing.
const pollEvery = 2 * time.Second

// autostarter turns start at login on and off; tests replace the real one.
type autostarter struct {
	enabled func() bool
	set     func(on bool) error
}

func systemAutostart() autostarter {
	return autostarter{
		enabled: platform.AutostartEnabled,
		set: func(on bool) error {
			exe, err := platform.AutostartExe()
			if err != nil {
				return err
			}
			return platform.SetAutostart(on, exe)
		},
	}
}

// ui owns the tray and the windows. Fields below "UI thread" are only touched on Fyne's thread
// (callbacks and onUI), so they need no lock.
type ui struct {
	app     fyne.App
	b       Backend
	log     *slog.Logger
	auto    autostarter
	quit    func()
	refresh *throttle
	retry   *pullRetry               // resumes downloads that failed for a passing reason
	pollOn  chan bool                // capacity 1: whether watch should poll (pollEvery), latest first
	park    *loopPark                // nil where Fyne's loop must keep running (the tray lives in it)
	noTray  bool                     // no tray host shows the icon: the window is the way in (UI thread; notray.go)
	notes   *notifier                // used by the event goroutine only
	trash   func(path string) error  // platform.MoveToTrash; tests use a trash in a temporary folder
	onUI    func(func())             // runs a function on the UI thread without waiting: fyne.Do, waking a parked loop
	loopDo  func(func())             // fyne.Do, or nothing once the UI thread is gone (parks use it)
	send    func(*fyne.Notification) // shows a notification (on the UI thread): App.SendNotification

	// UI thread
	snap     Snapshot
	polling  bool     // what was last sent on pollOn
	front    bool     // a window of the app has the keyboard focus (Fyne's Lifecycle: entered/exited foreground)
	tray     trayHost // nil when there is none (tests, no session bus)
	lastMenu []MenuItem
	trayIcon IconState
	traySet  bool
	models   *modelsWindow
	settings *settingsWindow
	logs     map[string]*logWindow

	getModels *getModelsWindow // open Get-models window, nil when closed
	activity  *activityWindow  // open Activity window, nil when closed
	tryIt     *tryItWindow     // open Try-it window, nil when closed

	modelSettings map[string]*modelSettingsWindow // open per-model settings windows, by model ID
}

func newUI(a fyne.App, b Backend, log *slog.Logger, auto autostarter) *ui {
	u := &ui{app: a, b: b, log: log, auto: auto, notes: newNotifier(), logs: map[string]*logWindow{}, pollOn: make(chan bool, 1)}
	u.quit = a.Quit
	u.trash = platform.MoveToTrash
	u.onUI = fyne.Do
	u.loopDo = fyne.Do
	u.send = a.SendNotification
	u.refresh = newThrottle(refreshEvery, u.pull)
	u.retry = newPullRetry(b)
	return u
}

// pull copies a snapshot off the UI thread and hands it to the UI thread.
func (u *ui) pull() {
	s := u.b.Snapshot()
	s.Autostart = u.auto.enabled()
	u.onUI(func() { u.apply(s) })
}

// watch turns engine events into refreshes and notifications until ctx ends.
func (u *ui) watch(ctx context.Context) {
	events, cancel := u.b.Subscribe()
	defer cancel()
	var pulls <-chan hub.Event // nil without a Hub: never ready
	if u.b.Offers().Hub {
		var stop func()
		pulls, stop = u.b.PullEvents()
		defer stop()
	}
	peers := u.b.PeersChanged() // nil without peers: never ready
	refreshed := make(chan struct{})
	go func() { u.refresh.run(ctx); close(refreshed) }()
	go u.watchUpdates(ctx)
	defer func() { <-refreshed }() // returns only when no refresh can start any more
	var tick *time.Ticker
	var ticks <-chan time.Time // nil while not polling
	defer func() {
		if tick != nil {
			tick.Stop()
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case on := <-u.pollOn:
			switch {
			case on && tick == nil:
				tick = time.NewTicker(pollEvery)
				ticks = tick.C
			case !on && tick != nil:
				tick.Stop()
				tick, ticks = nil, nil
			}
		case <-ticks:
			u.refresh.Kick()
		case ev := <-pulls: // a download's progress is in the tray menu's header
			u.retry.event(ev)
			u.refresh.Kick()
		case <-peers: // the other machines' models are in the tray menu
			peers = u.b.PeersChanged()
			u.refresh.Kick()
		case ev, ok := <-events:
			if !ok {
				return
			}
			if n, show := u.notes.event(ev, time.Now()); show {
				u.notify(n)
			}
			u.refresh.Kick()
		}
	}
}

// notify sends a system notification; it may be called from any goroutine.
func (u *ui) notify(n note) {
	u.onUI(func() { u.send(fyne.NewNotification(n.Title, n.Body)) })
}

// apply shows a new snapshot: tray menu and icon when they changed, and the open windows.
func (u *ui) apply(s Snapshot) {
	u.snap = s
	if u.tray != nil {
		if icon := TrayIcon(s); !u.traySet || icon != u.trayIcon {
			u.tray.setIcon(icon)
			u.trayIcon, u.traySet = icon, true
		}
		if menu := BuildMenu(s); !reflect.DeepEqual(menu, u.lastMenu) {
			u.tray.setMenu(menu)
			u.lastMenu = menu
		}
	}
	if u.models != nil {
		u.models.update(s)
	}
	if u.settings != nil {
		u.settings.update(s)
	}
	if u.tryIt != nil {
		u.tryIt.update(s)
	}
	if u.getModels != nil {
		u.getModels.downloads.update(s)
	}
	u.setPolling(u.windowShown() || slices.ContainsFunc(s.Models, Model.Running))
}

// setPolling tells watch whether to poll, when that changed.
func (u *ui) setPolling(on bool) {
	if on == u.polling {
		return
	}
	u.polling = on
	select {
	case <-u.pollOn: // an older wish, not yet seen
	default:
	}
	u.pollOn <- on
}

func (u *ui) windowShown() bool {
	return (u.models != nil && u.models.visible) || u.settings != nil || len(u.logs) > 0 || u.tryIt != nil || len(u.modelSettings) > 0
}

// do runs a menu or button action. It runs on the UI thread; anything that may block goes to a
// goroutine.
func (u *ui) do(a Action) {
	switch a.Kind {
	case ActCopy:
		u.app.Clipboard().SetContent(a.Text)
	case ActLoad:
		u.background("Loading "+a.Model, func() error { return u.b.Load(a.Model) })
	case ActUnload, ActForceUnload:
		force := a.Kind == ActForceUnload
		u.background("Unloading "+a.Model, func() error { return u.b.Unload(context.Background(), a.Model, force) })
	case ActPin, ActUnpin:
		pin := a.Kind == ActPin
		u.background("Pinning "+a.Model, func() error { return u.b.SetPinned(a.Model, pin) })
	case ActShowLogs:
		u.showLogs(a.Model)
	case ActOpenWindow:
		u.showModels()
	case ActOpenSettings:
		u.showSettings()
	case ActTryIt:
		u.showTryIt("")
	case ActOpenLogsFolder:
		u.openFolder(u.snap.LogDir)
	case ActToggleAutostart:
		on := !u.snap.Autostart
		u.background("Start at login", func() error { return u.auto.set(on) })
	case ActToggleLend:
		on := !u.snap.Lending.On
		u.background("Lend this machine", func() error { return u.b.SetLending(on) })
	case ActQuit:
		u.quit()
	case ActOpenURL:
		u.openLink(a.Text)
	}
}

// background runs fn off the UI thread, then refreshes; a failure is shown in the models window
// when it is open, else as a notification.
func (u *ui) background(what string, fn func() error) {
	go func() {
		err := fn()
		u.refresh.Kick()
		if err == nil {
			return
		}
		u.log.Warn("action failed", "action", what, "err", err)
		u.onUI(func() { u.showError(what, err) })
	}()
}

// showError reports a failed action: in the models window when it is visible, else as a notification.
func (u *ui) showError(what string, err error) {
	if u.models != nil && u.models.visible {
		u.models.showError(what, err)
		return
	}
	u.send(fyne.NewNotification(what+" failed", err.Error()))
}

// openFolder opens a folder in the system file manager.
func (u *ui) openFolder(dir string) {
	if dir == "" {
		return
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		u.showError("Open folder", err)
		return
	}
	link := &url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}
	if runtime.GOOS == "windows" {
		link.Path = "/" + link.Path
	}
	if err := u.app.OpenURL(link); err != nil {
		u.showError("Open folder", err)
	}
}

// trayResource is the tray icon for a state: template images on macOS, colour elsewhere.
func trayResource(s IconState) fyne.Resource {
	colour := [...][]byte{assets.TrayIdle, assets.TrayServing, assets.TrayLoading, assets.TrayError}
	template := [...][]byte{assets.TrayIdleTemplate, assets.TrayServingTemplate, assets.TrayLoadingTemplate, assets.TrayErrorTemplate}
	if runtime.GOOS == "darwin" {
		// A ThemedResource makes the driver set a template image, which macOS tints for the menu bar.
		return theme.NewThemedResource(fyne.NewStaticResource("tray-"+s.String()+"-template.png", template[s]))
	}
	return fyne.NewStaticResource("tray-"+s.String()+".png", colour[s])
}

var appIcon = fyne.NewStaticResource("icon.png", assets.AppIcon)

func (u *ui) showModels() {
	if u.models == nil {
		u.models = newModelsWindow(u)
	}
	u.models.show()
}

// trayLabel escapes a label for the tray. On Linux and BSD the menu travels over D-Bus
// (com.canonical.dbusmenu), where a single "_" marks a mnemonic and is not shown: model IDs such as
// "qwen2.5-7b-q4_k_m" would lose their underscores.
func trayLabel(s string) string {
	if runtime.GOOS == "linux" || strings.HasSuffix(runtime.GOOS, "bsd") {
		return strings.ReplaceAll(s, "_", "__")
	}
	return s
}
