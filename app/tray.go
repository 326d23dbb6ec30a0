package app

import (
	"fmt"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/driver/desktop"
)

// trayHost shows the tray icon and menu. Its methods run on the UI thread.
type trayHost interface {
	setIcon(IconState)
	setMenu([]MenuItem)
	close()
}

// fyneTray is the tray of Fyne's driver (macOS, Windows). Fyne rebuilds the whole menu on each
// change, which these platforms' menus take in their stride.
type fyneTray struct {
	u    *ui
	desk desktop.App
}

// startFyneTray sets up Fyne's tray: a click on the icon shows the models window.
func startFyneTray(u *ui) trayHost {
	desk, ok := u.app.(desktop.App)
	if !ok {
		return nil
	}
	desk.SetSystemTrayWindow(u.models.win)
	u.models.win.SetCloseIntercept(u.closeModels) // SetSystemTrayWindow installed a plain Hide
	return &fyneTray{u: u, desk: desk}
}

func (t *fyneTray) setIcon(s IconState) { t.desk.SetSystemTrayIcon(trayResource(s)) }

func (t *fyneTray) setMenu(items []MenuItem) {
	t.desk.SetSystemTrayMenu(fyne.NewMenu("Llamatray", t.u.fyneItems(items)...))
}

func (t *fyneTray) close() {}

// fyneItems turns menu data into Fyne menu items whose actions dispatch through do.
func (u *ui) fyneItems(items []MenuItem) []*fyne.MenuItem {
	out := make([]*fyne.MenuItem, 0, len(items))
	for _, it := range items {
		if it.Separator {
			out = append(out, fyne.NewMenuItemSeparator())
			continue
		}
		act := it.Action
		fi := fyne.NewMenuItem(trayLabel(it.Label), func() { u.do(act) })
		fi.Disabled = it.Disabled
		fi.Checked = it.Checked
		fi.IsQuit = act.Kind == ActQuit
		if len(it.Children) > 0 {
			fi.ChildMenu = fyne.NewMenu(trayLabel(it.Label), u.fyneItems(it.Children)...)
			fi.Action = nil
		}
		out = append(out, fi)
	}
	return out
}

// itemKey is a menu item's identity among its siblings, which keeps its place (and, over D-Bus,
// its ID) while its label changes: its Key, else its action, else "" (its label).
func itemKey(it MenuItem) string {
	switch {
	case it.Key != "":
		return it.Key
	case it.Action.Kind != ActNone:
		return fmt.Sprintf("action %d %q %q", it.Action.Kind, it.Action.Model, it.Action.Text)
	}
	return ""
}
