package app

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"fyne.io/fyne/v2/test"

	"github.com/llamatray/llamatray/router/testbed"
)

// A llama-server installed while Llamatray runs is found by the banner's Look again, with no
// restart, and the banner goes.
func TestLookAgainFindsLlamaServer(t *testing.T) {
	svc, sb, bin := noServerService(t, "http://127.0.0.1:1") // no install here: the releases are never asked
	if err := svc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Stop(context.Background()) })
	u, l := newWatchedUI(t, sb)
	l.wait(func() { u.models = newModelsWindow(u); u.models.show() })
	shows := func(what string) bool {
		var ok bool
		l.wait(func() { ok = hasText(u.models.win.Content(), what) })
		return ok
	}
	if !shows("llama-server not found") || !shows("[Look again]") {
		t.Fatalf("banner: %q", texts(u.models.win.Content()))
	}
	// The user installs llama-server with the system's packages meanwhile: it appears on PATH.
	fake := testbed.FakeLlamaServer(t)
	b, err := os.ReadFile(fake)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "llama-server"), b, 0o755); err != nil {
		t.Fatal(err)
	}
	l.wait(func() { test.Tap(findButton(t, u.models.banners, "Look again")) })
	testbed.WaitFor(t, 10*time.Second, "the banner to go", func() bool { return !shows("llama-server not found") })
	if !shows("Found llama-server at") {
		t.Errorf("status: %q", texts(u.models.win.Content()))
	}
	if got := svc.LlamaServer().Path; got != filepath.Join(bin, "llama-server") {
		t.Errorf("the service uses %q", got)
	}
}
