package app

import (
	"context"
	"fmt"
	"net/url"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/llamatray/llamatray/router/wire"
)

// The update notice: when the daily check of Llamatray's releases (update_check, router/update)
// finds a newer one, the tray menu's header and the models window say "Llamatray X is available"
// and open its release page in the browser. Nothing is downloaded or installed.

// updateFrom is the newer release a check found, "" when none is newer (or no check ran).
func updateFrom(u *wire.Update) (version, link string) {
	if u == nil || !u.Available || u.Latest == "" || u.URL == "" {
		return "", ""
	}
	return u.Latest, u.URL
}

// updateLabel is the notice's text.
func updateLabel(version string) string { return "Llamatray " + version + " is available" }

// updateItems is the tray header's line of a newer release: a click opens its page.
func updateItems(s Snapshot) []MenuItem {
	if s.UpdateVersion == "" {
		return nil
	}
	return []MenuItem{{Label: updateLabel(s.UpdateVersion) + "…", Action: Action{Kind: ActOpenURL, Text: s.UpdateURL}}}
}

// updateBanner is the models window's notice of a newer release, nil when there is none.
func (m *modelsWindow) updateBanner(s Snapshot) fyne.CanvasObject {
	if s.UpdateVersion == "" {
		return nil
	}
	head := boldLabel(updateLabel(s.UpdateVersion))
	body := wrapLabel("Its page has the installers and what changed; nothing is installed until you do. " +
		"The check runs once a day (update_check in the settings file).")
	open := widget.NewButtonWithIcon("Open release page", theme.ComputerIcon(), func() { m.u.do(Action{Kind: ActOpenURL, Text: s.UpdateURL}) })
	return container.NewBorder(nil, nil, nil, container.NewVBox(open), container.NewVBox(head, body))
}

// openURL opens a web page; tests replace it.
var openURL = func(a fyne.App, u *url.URL) error { return a.OpenURL(u) }

// openLink opens link, an http(s) address, in the browser.
func (u *ui) openLink(link string) {
	p, err := url.Parse(link)
	if err == nil && p.Scheme != "https" && p.Scheme != "http" {
		err = fmt.Errorf("%q is not a web address", link)
	}
	if err == nil {
		err = openURL(u.app, p)
	}
	if err != nil {
		u.showError("Open "+link, err)
	}
}

// watchUpdates refreshes the tray and windows when a check of Llamatray's releases ends (the check
// sends no engine event), until ctx ends. The next channel is taken before the refresh is asked
// for: a check that ends in between is then in what that refresh reads, or closes the channel
// taken.
func (u *ui) watchUpdates(ctx context.Context) {
	ch := u.b.UpdateChanged()
	u.refresh.Kick() // a check that ended before ch was taken
	for {
		select {
		case <-ctx.Done():
			return
		case <-ch:
			ch = u.b.UpdateChanged()
			u.refresh.Kick()
		}
	}
}
