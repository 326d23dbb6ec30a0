package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/service"
	"github.com/llamatray/llamatray/router/testbed"
	"github.com/llamatray/llamatray/router/testbed/ghreleases"
	"github.com/llamatray/llamatray/router/update"
	"github.com/llamatray/llamatray/router/wire"
)

func TestUpdateFrom(t *testing.T) {
	for _, tc := range []struct {
		u             *wire.Update
		version, link string
	}{
		{nil, "", ""},
		{&wire.Update{Current: "0.4.0", Latest: "0.4.0", URL: "https://x/v0.4.0"}, "", ""},
		{&wire.Update{Current: "dev", Build: "development", Latest: "0.4.0", URL: "https://x/v0.4.0"}, "", ""},
		{&wire.Update{Current: "0.3.0", Latest: "0.4.0", URL: "https://x/v0.4.0", Available: true}, "0.4.0", "https://x/v0.4.0"},
	} {
		if v, l := updateFrom(tc.u); v != tc.version || l != tc.link {
			t.Errorf("updateFrom(%+v) = %q %q, want %q %q", tc.u, v, l, tc.version, tc.link)
		}
	}
	s := snap()
	s.ListenAddr = "127.0.0.1:8080"
	if menu := BuildMenu(s); strings.Contains(fmt.Sprint(menu), "is available") {
		t.Errorf("a notice without a newer release: %v", menu)
	}
}

// recordURLs replaces openURL, returning what was opened.
func recordURLs(t *testing.T) func() []string {
	var mu sync.Mutex // guards opened
	var opened []string
	old := openURL
	openURL = func(_ fyne.App, u *url.URL) error {
		mu.Lock()
		defer mu.Unlock()
		opened = append(opened, u.String())
		return nil
	}
	t.Cleanup(func() { openURL = old })
	return func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), opened...) }
}

// A real service of version 0.3.0 checks the stand-in's releases; when the check ends, the tray
// header and the models window say "Llamatray 0.4.0 is available", and their link opens the
// release page. Nothing else happens: no download.
func TestUpdateNoticeFromService(t *testing.T) {
	home := isolateXDG(t)
	gh := ghreleases.NewRepo(ghreleases.LlamatrayRepo)
	t.Cleanup(gh.Close)
	gh.Add("v0.3.0", map[string][]byte{"Llamatray-Setup-0.3.0.exe": []byte("MZ")})
	t.Setenv(update.URLEnv, gh.Base)
	cfg := config.Default()
	cfg.Listen = fmt.Sprintf("127.0.0.1:%d", testbed.FreePort(t))
	cfg.ModelDirs = []string{home}
	cfg.ScanDefaultDirs = false
	cfg.LlamaServer = testbed.FakeLlamaServer(t)
	svc, err := service.New(cfg, service.Options{Version: "0.3.0", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		svc.Stop(ctx)
	})
	b := newServiceBackend(svc)
	opened := recordURLs(t)
	u, l := newWatchedUI(t, b)
	shows := func(what string) (ok bool) { l.wait(func() { ok = hasText(u.models.win.Content(), what) }); return }
	applied := func() (s Snapshot) { l.wait(func() { s = u.snap }); return }

	// Up to date: no notice.
	if !svc.CheckReleases(context.Background()) {
		t.Fatal("update_check is on by default, yet nothing was checked")
	}
	if s := b.Snapshot(); s.UpdateVersion != "" || strings.Contains(fmt.Sprint(BuildMenu(s)), "is available") {
		t.Fatalf("a notice while up to date: %+v", s)
	}

	gh.Add("v0.4.0", map[string][]byte{"Llamatray-Setup-0.4.0.exe": []byte("MZ")})
	page := strings.TrimSuffix(gh.Base, "/repos/"+ghreleases.LlamatrayRepo+"/releases") + "/" + ghreleases.LlamatrayRepo + "/releases/tag/v0.4.0"
	svc.CheckReleases(context.Background())
	// No engine event comes, and with no window open and no model running the UI does not poll: the
	// end of the check itself refreshes the tray.
	testbed.WaitFor(t, 10*time.Second, "the notice in the tray", func() bool { return applied().UpdateVersion == "0.4.0" })
	l.wait(func() { u.models = newModelsWindow(u); u.models.show() })
	testbed.WaitFor(t, 10*time.Second, "the notice in the models window", func() bool { return shows("Llamatray 0.4.0 is available") })

	menu := BuildMenu(applied())
	var notice *MenuItem
	for i, it := range menu {
		if it.Separator {
			break // the header ends
		}
		if it.Label == "Llamatray 0.4.0 is available…" {
			notice = &menu[i]
		}
	}
	if notice == nil || notice.Action != (Action{Kind: ActOpenURL, Text: page}) {
		t.Fatalf("tray header lacks the notice: %+v", menu)
	}
	l.wait(func() { u.do(notice.Action) })
	l.wait(func() { test.Tap(findButton(t, u.models.win.Content(), "Open release page")) })
	if got := opened(); len(got) != 2 || got[0] != page || got[1] != page {
		t.Errorf("opened %q, want the release page %s twice", got, page)
	}
	if gh.Downloads() != 0 {
		t.Errorf("%d downloads: the notice installs nothing", gh.Downloads())
	}

	// update_check off: the notice goes at the next refresh.
	if err := svc.Edit(func(c *config.Config) error { c.UpdateCheck = false; return nil }); err != nil {
		t.Fatal(err)
	}
	u.pull()
	testbed.WaitFor(t, 10*time.Second, "the notice to go", func() bool { return !shows("is available") })
}

// A link that is not a web page is refused, not handed to the system.
func TestOpenLinkRefusesOtherSchemes(t *testing.T) {
	opened := recordURLs(t)
	u, _, l := newTestUI(t, snap())
	l.wait(func() { u.openLink("file:///etc/passwd") })
	if got := opened(); len(got) != 0 {
		t.Errorf("opened %q", got)
	}
}
