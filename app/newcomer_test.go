package app

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/hub"
	"github.com/llamatray/llamatray/router/releases"
	"github.com/llamatray/llamatray/router/testbed"
	"github.com/llamatray/llamatray/router/testbed/fakehub"
	"github.com/llamatray/llamatray/router/testbed/ghreleases"
)

// TestNewcomerPath walks a newcomer's way from an empty home (no llama-server, no models, no
// configuration) to a first streamed answer in the window, counting clicks and keystrokes: Install
// llama-server on the banner, Get models…, the first starter's Download, Try it… once it is ready,
// a prompt typed where the cursor is and Enter, then a follow-up and Enter in the same conversation. Everything is real but the Internet: the service, the GitHub releases and Hub
// stand-ins, the download, the catalog's scan, the router over HTTP; with LLAMA_SERVER set the
// installed build is the real llama-server (make newcomer), else the fake one.
func TestNewcomerPath(t *testing.T) {
	real := os.Getenv("LLAMA_SERVER")
	var tgz []byte
	if real != "" {
		build, err := ghreleases.FromRelocatable(real)
		if err != nil {
			t.Fatal(err)
		}
		if tgz, err = build.TarGz("b7100"); err != nil {
			t.Fatal(err)
		}
	} else {
		tgz = ghreleases.FakeTarGz(t, "b7100")
	}
	gh := ghreleases.New()
	t.Cleanup(gh.Close)
	gh.Add("b7100", map[string][]byte{ghreleases.AssetName("b7100", ".tar.gz"): tgz})
	starter := hub.Starters[0] // what the window offers first
	ref, err := hub.ParseRef(starter.Name)
	if err != nil {
		t.Fatal(err)
	}
	fh := fakehub.New()
	t.Cleanup(fh.Close)
	if err := fh.AddModelRepo(t.TempDir(), ref.Repo, ref.Quant); err != nil {
		t.Fatal(err)
	}

	isolateXDG(t)
	for k, v := range map[string]string{"PATH": "/usr/bin:/bin", "LLAMA_SERVER": "", releases.URLEnv: gh.Base,
		"HF_ENDPOINT": fh.URL(), "HF_TOKEN": "", "HF_HOME": "", "HF_HUB_CACHE": ""} {
		t.Setenv(k, v)
	}
	if p, err := exec.LookPath("llama-server"); err == nil {
		t.Skipf("a llama-server is on PATH (%s): not a fresh machine", p)
	}
	cfg := config.Default() // what a first start has, but another port than 8080
	cfg.Listen = "127.0.0.1:" + strconv.Itoa(testbed.FreePort(t))
	if real != "" {
		// The starter stand-in is a tiny model of random weights that rarely says its end
		// token: its answers would run to the context's end (thousands of tokens, minutes on a
		// loaded machine). A default length bounds them, as a real model's end token does.
		cfg.Defaults.Args = []string{"--n-predict", "64"}
	}
	svc, sb := startedService(t, cfg)
	if s := sb.Snapshot(); s.Server.Path != "" || len(s.Models) != 0 {
		t.Fatalf("not an empty home: llama-server %q, %d models", s.Server.Path, len(s.Models))
	}

	u, l := newWatchedUI(t, sb)
	clicks := 0
	click := func(what string, b func() *widget.Button) {
		t.Helper()
		l.wait(func() { test.Tap(b()) })
		clicks++
		t.Logf("click %d: %s", clicks, what)
	}
	until := func(what string, o func() fyne.CanvasObject, want string) {
		t.Helper()
		var shown []string
		if !testbed.Poll(context.Background(), 2*time.Minute, 20*time.Millisecond, func() bool {
			var ok bool
			l.wait(func() { ok, shown = hasText(o(), want), texts(o()) })
			return ok
		}) {
			t.Fatalf("timed out waiting for %s; the window shows %q", what, shown)
		}
	}
	t0 := time.Now()
	l.wait(func() { u.models = newModelsWindow(u); u.models.show() }) // the app opens it at first start
	main := func() fyne.CanvasObject { return u.models.win.Content() }
	until("the banner", main, "[Install llama-server]")
	testbed.WaitFor(t, time.Minute, "the build choice", func() bool {
		var picked string
		l.wait(func() { picked = u.models.install.pick.Selected })
		return picked != ""
	})
	click("Install llama-server", func() *widget.Button { return findButton(t, u.models.banners, "Install llama-server") })
	click("Get models…", func() *widget.Button { return findButton(t, u.models.list, "Get models…") })
	var g *getModelsWindow
	l.wait(func() { g = u.getModels })
	if g == nil {
		t.Fatal("Get models… opened no window")
	}
	t.Cleanup(func() { l.wait(func() { g.win.Close() }) })
	until("the starters", func() fyne.CanvasObject { return g.results }, starter.Name)
	click("the first starter's Download", func() *widget.Button { return starterButton(t, g, starter.Name, "Download") })
	until("the download to end", func() fyne.CanvasObject { return g.win.Content() }, "is downloaded, verified and ready")
	tDownloaded := time.Since(t0)
	testbed.WaitFor(t, 2*time.Minute, "the install to end", func() bool { return svc.LlamaServer().Build == "b7100" })
	tInstalled := time.Since(t0)
	click("Try it…", func() *widget.Button { return findButton(t, g.win.Content(), "Try it…") })
	var tw *tryItWindow
	l.wait(func() { tw = u.tryIt })
	if tw == nil {
		t.Fatal("Try it… opened nothing")
	}
	testbed.WaitFor(t, time.Minute, "the downloaded model picked", func() bool {
		var picked string
		l.wait(func() { picked = tw.model.Selected })
		return picked == ref.Repo+":"+ref.Quant
	})
	// The prompt has the cursor: typed into what has the focus, Enter sends.
	kb := &keyboard{t: t, l: l}
	const prompt, followUp = "Say hello.", "And again."
	kb.typeText(tw.win, prompt)
	tSend := time.Now()
	kb.press(tw.win, fyne.KeyReturn, false)
	status := func() string {
		var s string
		l.wait(func() { s = tw.status.Text })
		return s
	}
	testbed.WaitFor(t, 2*time.Minute, "the first token", func() bool { return strings.HasPrefix(status(), "First token after") })
	first := time.Since(tSend)
	total := time.Since(t0)
	answered := func(n int) func() bool {
		return func() bool {
			var ok bool
			l.wait(func() { ok = tw.cancel == nil && len(tw.turns) == 2*n && strings.Contains(tw.status.Text, "tokens/s") })
			return ok
		}
	}
	testbed.WaitFor(t, 2*time.Minute, "the whole answer", answered(1))
	firstSummary := status()
	// A follow-up in the same conversation, by the keyboard again.
	kb.typeText(tw.win, followUp)
	kb.press(tw.win, fyne.KeyReturn, false)
	testbed.WaitFor(t, 2*time.Minute, "the follow-up's answer", answered(2))
	if p1, p2 := promptTokens(t, firstSummary), promptTokens(t, status()); p2 <= p1 {
		t.Errorf("the follow-up's prompt has %d tokens, the first %d: the first turn was not sent with it", p2, p1)
	}
	wantKeys := len(prompt) + 1 + len(followUp) + 1
	if clicks != 4 || kb.keys != wantKeys {
		t.Errorf("%d clicks and %d keys, want 4 and %d", clicks, kb.keys, wantKeys)
	}
	build := "the fake llama-server"
	if real != "" {
		build = "the real llama-server"
	}
	t.Logf("from an empty home to a first answer and a follow-up in the window: %d clicks, %d keys, first answer after %.1f s (%s; download ready after %.1f s, install after %.1f s, first token %d ms after Enter, the load included); %s",
		clicks, kb.keys, total.Seconds(), build, tDownloaded.Seconds(), tInstalled.Seconds(), first.Milliseconds(), status())
}

// starterButton is the button labelled label in the starter row of name.
func starterButton(t *testing.T, g *getModelsWindow, name, label string) *widget.Button {
	t.Helper()
	for _, row := range g.results.Objects {
		if c, ok := row.(*fyne.Container); ok && hasText(c, name) {
			return findButton(t, c, label)
		}
	}
	t.Fatalf("no starter row %s in %q", name, texts(g.results))
	return nil
}
