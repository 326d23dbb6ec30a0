package app

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// setTrayHosted records whether a tray host shows Llamatray's icon (UI thread). Without one the
// models window is the only way to reach the app: it says so, offers Quit, and closing it quits.
func (u *ui) setTrayHosted(ok bool) {
	if u.noTray == !ok {
		return
	}
	u.noTray = !ok
	if u.models != nil {
		u.models.update(u.snap)
	}
}

// closeModels is what closing the models window does: it hides, as the app stays in the tray;
// without a tray host it quits, so that no invisible process keeps the port.
func (u *ui) closeModels() {
	if u.noTray {
		u.log.Info("the models window was closed and there is no system tray: quitting")
		u.quit()
		return
	}
	u.models.hide()
}

// noTrayBanner says there is no tray host and offers Quit, or is nil when there is one.
func (m *modelsWindow) noTrayBanner() fyne.CanvasObject {
	if !m.u.noTray {
		return nil
	}
	quit := widget.NewButtonWithIcon("Quit", theme.LogoutIcon(), m.u.quit)
	return notice("No system tray",
		"No tray host shows Llamatray's icon on this desktop (on GNOME, an AppIndicator extension adds one). "+
			"This window is the way to Llamatray: closing it quits Llamatray and stops every model.", quit)
}
