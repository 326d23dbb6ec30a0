package app

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"github.com/llamatray/llamatray/router/catalog"
	"github.com/llamatray/llamatray/router/hub"
	"github.com/llamatray/llamatray/router/testbed"
	"github.com/llamatray/llamatray/router/testbed/fakehub"
)

// A name as users paste it — ORG/REPO:QUANT, hf.co/…, a huggingface.co link — opens that repo's
// files at once instead of searching for the text.
func TestGetModelsTakesPastedNames(t *testing.T) {
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
	fb := newFakeBackend(windowSnapshot())
	u, l := newTestUIWith(t, withHub(fb, hb))
	for _, pasted := range []string{repo + ":Q8_0", "hf.co/" + repo, "https://huggingface.co/" + repo + "/blob/main/Tiny-GGUF-Q8_0.gguf"} {
		var g *getModelsWindow
		l.wait(func() {
			u.showGetModels()
			g = u.getModels
			test.Type(g.search, pasted)
			test.Tap(findButton(t, g.win.Content(), "Search"))
		})
		testbed.WaitFor(t, 10*time.Second, "the quants of "+repo+" for "+pasted, func() bool {
			var ok bool
			l.wait(func() { ok = hasText(g.quants, "Q8_0") && hasText(g.quants, "Q4_K_M") })
			return ok
		})
		l.wait(func() {
			if all := strings.Join(texts(g.results), " | "); all != "" {
				t.Errorf("%s: searched instead of opening the repo: %s", pasted, all)
			}
			g.win.Close()
		})
	}
}

// A long download error wraps inside the window: at 1,280 px wide its content needs no more.
func TestGetModelsLongErrorWraps(t *testing.T) {
	fh := fakehub.New()
	t.Cleanup(fh.Close)
	cache := hub.Cache{Dir: filepath.Join(t.TempDir(), "hub")}
	m := hub.NewManager(&hub.Client{Endpoint: fh.URL()}, cache, nil, nil)
	hb := testManagerHub(m, nil)
	u, l := newTestUIWith(t, withHub(newFakeBackend(windowSnapshot()), hb))
	long := "Org/Tiny-GGUF:Q8_0: tiny-Q8_0.gguf: sha256 mismatch: the Hub lists " + strings.Repeat("0123456789abcdef", 4) +
		", the file has " + strings.Repeat("fedcba9876543210", 4) + "; the download was refused and deleted. " + strings.Repeat("Check your network or mirror (HF_ENDPOINT) and try again. ", 6)
	l.wait(func() {
		u.showGetModels()
		g := u.getModels
		g.win.Resize(fyne.NewSize(1280, 700))
		g.setPulling("", long)
		g.status.SetText("Search failed: " + long)
		if w := g.win.Content().MinSize().Width; w > 1280 {
			t.Errorf("the window needs %.0f px for a long error; it must wrap inside 1280", w)
		}
		g.win.Content().Refresh() // the layout a real window makes on its next frames, once the labels have their width
		g.win.Content().Refresh()
		// Both wrapped lines lie whole inside the window, the status above the lists.
		d := fyne.CurrentApp().Driver()
		for _, l := range []*widget.Label{g.status, g.pullLine} {
			at, size := d.AbsolutePositionForObject(l), l.Size()
			if at.Y < 0 || at.Y+size.Height > 700 || at.X+size.Width > 1280 {
				t.Errorf("a label at %v sized %v lies outside the 1280×700 window", at, size)
			}
		}
	})
	shoot(t, l, u.getModels.win, "getmodels-long-error")
	l.wait(func() { u.getModels.win.Close() })
}

// Search results say downloads, likes and gated; a gated repo without access explains how to get
// it and its Download buttons stay off; a repo that fails to load offers Retry.
func TestGetModelsGatedAndRetry(t *testing.T) {
	const repo = "Org/Tiny-GGUF"
	fh := fakehub.New()
	t.Cleanup(fh.Close)
	if err := fh.AddModelRepo(t.TempDir(), repo, "Q4_K_M"); err != nil {
		t.Fatal(err)
	}
	fh.Gate(repo, "hf_has_access")
	cache := hub.Cache{Dir: filepath.Join(t.TempDir(), "hub")}
	m := hub.NewManager(&hub.Client{Endpoint: fh.URL()}, cache, nil, nil)
	hb := testManagerHub(m, nil)
	u, l := newTestUIWith(t, withHub(newFakeBackend(windowSnapshot()), hb))
	var g *getModelsWindow
	l.wait(func() {
		u.showGetModels()
		g = u.getModels
		if f := g.win.Canvas().Focused(); f != g.search {
			t.Errorf("the search field is not focused when the window opens (%T)", f)
		}
		test.Type(g.search, "tiny")
		test.Tap(findButton(t, g.win.Content(), "Search"))
	})
	testbed.WaitFor(t, 10*time.Second, "a result with its downloads, likes and gated flag", func() bool {
		var ok bool
		l.wait(func() { ok = hasText(g.results, "likes") && hasText(g.results, "gated: needs a token") })
		return ok
	})
	l.wait(func() { test.Tap(findButtonPrefix(t, g.results, repo)) })
	testbed.WaitFor(t, 10*time.Second, "how to get access", func() bool {
		var ok bool
		l.wait(func() { ok = hasText(g.quants, "accept its terms") })
		return ok
	})
	l.wait(func() {
		if b := quantButton(t, g, "Q4_K_M"); !b.Disabled() {
			t.Error("Download is enabled for a gated repo this client has no access to")
		}
	})
	shoot(t, l, g.win, "getmodels-gated")

	// A repo the Hub does not have: the error, and Retry.
	l.wait(func() { g.openRepo("Org/Missing-GGUF") })
	testbed.WaitFor(t, 10*time.Second, "Retry after a failed repo", func() bool {
		var ok bool
		l.wait(func() { ok = hasText(g.quants, "Retry") })
		return ok
	})
	l.wait(func() { g.win.Close() })
}

// findButtonPrefix finds a visible button whose label starts with prefix.
func findButtonPrefix(t *testing.T, o fyne.CanvasObject, prefix string) *widget.Button {
	t.Helper()
	for _, x := range test.LaidOutObjects(o) {
		if b, ok := x.(*widget.Button); ok && strings.HasPrefix(b.Text, prefix) && b.Visible() {
			return b
		}
	}
	t.Fatalf("no button starting %q in %q", prefix, texts(o))
	return nil
}

// A Hub the network cannot reach: the search is tried once more where the user sees it, then
// the error says what failed and offers Retry.
func TestGetModelsUnreachableHub(t *testing.T) {
	m := hub.NewManager(&hub.Client{Endpoint: "http://no-such-host.invalid"}, hub.Cache{Dir: filepath.Join(t.TempDir(), "hub")}, nil, nil)
	hb := testManagerHub(m, nil)
	u, l := newTestUIWith(t, withHub(newFakeBackend(windowSnapshot()), hb))
	var g *getModelsWindow
	var saw []string
	l.wait(func() {
		u.showGetModels()
		g = u.getModels
		test.Type(g.search, "qwen")
		test.Tap(findButton(t, g.win.Content(), "Search"))
	})
	testbed.WaitFor(t, 20*time.Second, "the failed search with Retry", func() bool {
		var ok bool
		l.wait(func() {
			saw = append(saw, g.status.Text)
			ok = hasText(g.results, "Retry")
		})
		return ok
	})
	l.wait(func() {
		if !strings.Contains(g.status.Text, "does not resolve") {
			t.Errorf("the error does not say what failed: %q", g.status.Text)
		}
		g.win.Close()
	})
	if !strings.Contains(strings.Join(saw, "\n"), "Trying again (2 of 2)") {
		t.Errorf("the second try was not shown: %q", saw)
	}
}

// Before anything is typed the window offers the starters the Hub still has, with their use,
// size and fit; a gone one is not shown; picking one opens its repo.
func TestGetModelsStarters(t *testing.T) {
	fh := fakehub.New()
	t.Cleanup(fh.Close)
	if err := fh.AddModelRepo(t.TempDir(), "Org/Chat-GGUF", "Q4_K_M"); err != nil {
		t.Fatal(err)
	}
	cache := hub.Cache{Dir: filepath.Join(t.TempDir(), "hub")}
	cat := catalog.New(catalog.Options{Dirs: []string{cache.Dir}})
	m := hub.NewManager(&hub.Client{Endpoint: fh.URL()}, cache, func(string, []string) error { return cat.Scan(context.Background()) }, nil)
	hb := testManagerHub(m, cat.Lookup)
	hb.starters = []hub.Starter{
		{Use: "chat", Name: "Org/Chat-GGUF:Q4_K_M", Why: "a small chat model"},
		{Use: "coding", Name: "Org/Gone-GGUF:Q4_K_M", Why: "no longer on the Hub"},
	}
	u, l := newTestUIWith(t, withHub(newFakeBackend(windowSnapshot()), hb))
	var g *getModelsWindow
	l.wait(func() {
		u.showGetModels()
		g = u.getModels
	})
	testbed.WaitFor(t, 10*time.Second, "the starter list", func() bool {
		var ok bool
		l.wait(func() { ok = hasText(g.results, "To start with") && hasText(g.results, "Fits now") })
		return ok
	})
	l.wait(func() {
		if hasText(g.results, "Gone") {
			t.Errorf("a starter the Hub no longer has is shown: %q", texts(g.results))
		}
	})
	shoot(t, l, g.win, "getmodels-starters")
	l.wait(func() { test.Tap(findButtonPrefix(t, g.results, "Org/Chat-GGUF")) })
	testbed.WaitFor(t, 10*time.Second, "the starter's repo", func() bool {
		var ok bool
		l.wait(func() { ok = hasText(g.quants, "Q4_K_M") })
		return ok
	})

	// The starter's own Download takes the quant it names, without a second click in its repo; then
	// Try it… opens with that model.
	l.wait(func() { test.Tap(starterButton(t, g, "Org/Chat-GGUF", "Download")) })
	l.wait(func() {
		if b := starterButton(t, g, "Org/Chat-GGUF", "Download"); !b.Disabled() {
			t.Error("the starter's Download is still enabled while it downloads")
		}
	})
	testbed.WaitFor(t, 10*time.Second, "the starter downloaded", func() bool {
		var ok bool
		l.wait(func() { ok = hasText(g.win.Content(), "Org/Chat-GGUF:Q4_K_M is downloaded, verified and ready") })
		return ok
	})
	testbed.WaitFor(t, 10*time.Second, "its quant downloaded", func() bool {
		var ok bool
		l.wait(func() { ok = hasText(g.quants, "Downloaded") && hasText(g.results, "[Try it…]") })
		return ok
	})
	shoot(t, l, g.win, "getmodels-ready")
	l.wait(func() { test.Tap(findButton(t, g.win.Content(), "Try it…")) })
	l.wait(func() {
		if u.tryIt == nil {
			t.Fatal("Try it… opened nothing")
		}
		if got := u.tryIt.model.Selected + u.tryIt.want; !strings.Contains(got, "Org/Chat-GGUF:Q4_K_M") {
			t.Errorf("Try it picked %q", got)
		}
		u.tryIt.win.Close()
	})
	l.wait(func() { g.win.Close() })

	// Opened again, the starter on this machine offers Try it…, not Download.
	l.wait(func() {
		u.showGetModels()
		g = u.getModels
	})
	testbed.WaitFor(t, 10*time.Second, "the downloaded starter's Try it…", func() bool {
		var ok bool
		l.wait(func() { ok = hasText(g.results, "[Try it…]") && !hasText(g.results, "[Download]") })
		return ok
	})
	l.wait(func() {
		test.Tap(starterButton(t, g, "Org/Chat-GGUF", "Try it…"))
		if u.tryIt == nil {
			t.Fatal("the starter's Try it… opened nothing")
		}
		u.tryIt.win.Close()
		g.win.Close()
	})
}
