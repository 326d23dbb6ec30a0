//go:build (linux || freebsd || openbsd || netbsd) && !android

package app

import (
	"github.com/llamatray/llamatray/app/internal/sni"
	"github.com/llamatray/llamatray/app/platform"
)

// sniTray is the tray on Linux and the BSDs: a StatusNotifierItem of our own (package sni) in
// place of Fyne's, whose menu changes in whole steps with stable item IDs, as hosts that draw
// it with libdbusmenu-gtk need, and which needs no hidden window.
type sniTray struct {
	u *ui
	t *sni.Tray
}

// startTray shows the tray icon; a click on it shows the models window. Without a session bus
// there is no tray: the app goes on with its window. With the tray, Fyne's loop may park while no
// window is shown (idle.go): nothing the tray does needs it.
func startTray(u *ui) trayHost {
	u.park = newLoopPark() // before the tray's goroutines may call onUI
	t, err := sni.Start(sni.Options{
		ID:         platform.AppID,
		Title:      "Llamatray",
		Icon:       trayResource(TrayIcon(u.snap)).Content(),
		OnActivate: func() { u.onUI(u.showModels) },
		OnHost:     func(ok bool) { u.onUI(func() { u.setTrayHosted(ok) }) },
		Logger:     u.log,
	})
	if err != nil {
		u.log.Warn("no tray icon", "err", err)
		u.park = nil // nothing but the window reaches the app: keep Fyne's loop going
		u.setTrayHosted(false)
		return nil
	}
	return &sniTray{u: u, t: t}
}

func (s *sniTray) setIcon(st IconState) {
	if err := s.t.SetIcon(trayResource(st).Content()); err != nil {
		s.u.log.Warn("tray icon not updated", "err", err)
	}
}

func (s *sniTray) setMenu(items []MenuItem) { s.t.SetMenu(s.items(items)) }

func (s *sniTray) close() {
	if err := s.t.Close(); err != nil {
		s.u.log.Debug("closing the tray", "err", err)
	}
}

func (s *sniTray) items(items []MenuItem) []sni.Item {
	out := make([]sni.Item, 0, len(items))
	for _, it := range items {
		act := it.Action
		si := sni.Item{
			Key:       itemKey(it),
			Label:     trayLabel(it.Label),
			Disabled:  it.Disabled,
			Checkable: it.Checked || act.Kind == ActToggleAutostart || act.Kind == ActToggleLend,
			Checked:   it.Checked,
			Separator: it.Separator,
			Children:  s.items(it.Children),
		}
		if act.Kind != ActNone && len(it.Children) == 0 && !it.Separator {
			si.Click = func() { s.u.onUI(func() { s.u.do(act) }) }
		}
		out = append(out, si)
	}
	return out
}
