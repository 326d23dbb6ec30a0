package app

import (
	"context"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"github.com/llamatray/llamatray/router/catalog"
	"github.com/llamatray/llamatray/router/fit"
	"github.com/llamatray/llamatray/router/hub"
	"github.com/llamatray/llamatray/router/testbed"
	"github.com/llamatray/llamatray/router/testbed/fakehub"
)

// testManagerHub is the Hub part of a test backend over m: room for 8 GiB, a 512-token context, and
// lookup for the models on this machine (nil: none).
func testManagerHub(m *hub.Manager, lookup func(string) (catalog.Model, bool)) *managerHub {
	if lookup == nil {
		lookup = func(string) (catalog.Model, bool) { return catalog.Model{}, false }
	}
	return &managerHub{m: m,
		room:   func() fit.Room { return fit.Room{Limit: 8 << 30, Free: 8 << 30} },
		params: func() catalog.EstimateParams { return catalog.EstimateParams{ContextSize: 512} },
		lookup: lookup,
	}
}

// withHub gives the fake backend a real Hub manager against the stand-in.
func withHub(fb *fakeBackend, h *managerHub) *fakeBackend {
	fb.managerHub = h
	return fb
}

// shoot saves the window as PNG under $LLAMATRAY_SCREENSHOTS, when set, once its layout has
// settled; the capture runs on the UI loop.
func shoot(t *testing.T, l *uiLoop, w fyne.Window, name string) {
	dir := os.Getenv("LLAMATRAY_SCREENSHOTS")
	if dir == "" {
		return
	}
	var img image.Image
	l.wait(func() {
		// The layout a real window reaches over its next frames: wrapped labels report their height
		// only once they have their width.
		w.Content().Refresh()
		w.Content().Refresh()
		img = w.Canvas().Capture()
	})
	f, err := os.Create(filepath.Join(dir, name+".png"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := png.Encode(f, img); err != nil {
		t.Fatal(err)
	}
}

// From "No models found": Get models…, search, the quants with sizes and fit badges, Download with
// progress to the end, then a download cancelled leaving nothing.
func TestGetModelsWindow(t *testing.T) {
	const repo = "Org/Tiny-GGUF"
	fh := fakehub.New()
	t.Cleanup(fh.Close)
	if err := fh.AddModelRepo(t.TempDir(), repo, "Q4_K_M", "Q8_0"); err != nil {
		t.Fatal(err)
	}
	cache := hub.Cache{Dir: filepath.Join(t.TempDir(), "hub")}
	cat := catalog.New(catalog.Options{Dirs: []string{cache.Dir}})
	m := hub.NewManager(&hub.Client{Endpoint: fh.URL()}, cache, func(string, []string) error { return cat.Scan(context.Background()) }, nil)
	hb := testManagerHub(m, cat.Lookup)
	empty := windowSnapshot()
	empty.Models = nil
	fb := newFakeBackend(empty)
	fb.dir = t.TempDir()
	u, l := newTestUIWith(t, withHub(fb, hb))
	l.wait(func() {
		u.models = newModelsWindow(u)
		u.models.show()
	})
	shoot(t, l, u.models.win, "getmodels-0-no-models")
	l.wait(func() { test.Tap(findButton(t, u.models.list, "Get models…")) })
	var g *getModelsWindow
	l.wait(func() { g = u.getModels })
	if g == nil {
		t.Fatal("Get models… opened no window")
	}
	t.Cleanup(func() { l.wait(func() { g.win.Close() }) })
	see := func(what string, o func() fyne.CanvasObject) {
		t.Helper()
		testbed.WaitFor(t, 10*time.Second, "the window to show "+what, func() bool {
			var ok bool
			l.wait(func() { ok = hasText(o(), what) })
			return ok
		})
	}
	content := func() fyne.CanvasObject { return g.win.Content() }

	l.wait(func() {
		test.Type(g.search, "tiny")
		test.Tap(findButton(t, g.win.Content(), "Search"))
	})
	see(repo, content)
	shoot(t, l, g.win, "getmodels-1-search")
	l.wait(func() { test.Tap(findButtonPrefix(t, g.results, repo)) })
	see("Fits now", func() fyne.CanvasObject { return g.quants })
	l.wait(func() {
		all := strings.Join(texts(g.quants), " | ")
		for _, want := range []string{"Q4_K_M", "Q8_0", "[Download]", "MiB"} {
			if !strings.Contains(all, want) {
				t.Errorf("quant list lacks %q: %s", want, all)
			}
		}
	})
	shoot(t, l, g.win, "getmodels-2-quants")

	// Download the first quant to the end.
	l.wait(func() { test.Tap(quantButton(t, g, "Q4_K_M")) })
	see("is downloaded, verified and ready", content)
	if _, ok := cat.Lookup(repo + ":Q4_K_M"); !ok {
		t.Error("the downloaded model is not in the catalog")
	}
	see("Downloaded", func() fyne.CanvasObject { return g.quants })
	shoot(t, l, g.win, "getmodels-3-downloaded")

	// A download held halfway shows progress, and Cancel leaves nothing of it.
	started := fh.Stall(repo, fakehub.FileName(repo, "Q8_0"), 200_000)
	l.wait(func() { test.Tap(quantButton(t, g, "Q8_0")) })
	<-started
	see("Downloading "+repo+":Q8_0", content)
	testbed.WaitFor(t, 10*time.Second, "progress past the first bytes", func() bool {
		var v float64
		l.wait(func() { v = g.progress.Value })
		return v > 0
	})
	l.wait(func() {
		if !g.progress.Visible() || !g.cancel.Visible() {
			t.Error("no progress bar or Cancel while downloading")
		}
	})
	shoot(t, l, g.win, "getmodels-4-progress")
	l.wait(func() { test.Tap(g.cancel) })
	see("cancelled; nothing was kept", content)
	sha := fh.SHA256(repo, fakehub.FileName(repo, "Q8_0"))
	for _, p := range []string{sha, sha + ".incomplete"} {
		if _, err := os.Stat(filepath.Join(cache.RepoDir(repo), "blobs", p)); !os.IsNotExist(err) {
			t.Errorf("cancel left %s: %v", p, err)
		}
	}
}

// quantButton is the Download button on a quant's row.
func quantButton(t *testing.T, g *getModelsWindow, quant string) *widget.Button {
	t.Helper()
	for _, row := range g.quants.Objects {
		if c, ok := row.(*fyne.Container); ok && hasText(c, quant) {
			return findButton(t, c, "Download")
		}
	}
	t.Fatalf("no row for %s in %q", quant, texts(g.quants))
	return nil
}
