package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2/test"

	"github.com/llamatray/llamatray/router/hub"
	"github.com/llamatray/llamatray/router/testbed"
	"github.com/llamatray/llamatray/router/testbed/fakehub"
)

// Settings keeps a pasted Hugging Face token in $HF_HOME/token, where the Hub's own tools read
// it, and the next listing of a gated repo has access with it.
func TestSettingsSavesHubToken(t *testing.T) {
	const repo = "Org/Tiny-GGUF"
	home := t.TempDir()
	t.Setenv("HF_HOME", home)
	t.Setenv("HF_TOKEN", "")
	t.Setenv("HF_TOKEN_PATH", "")
	fh := fakehub.New()
	t.Cleanup(fh.Close)
	if err := fh.AddModelRepo(t.TempDir(), repo, "Q4_K_M"); err != nil {
		t.Fatal(err)
	}
	fh.Gate(repo, "hf_granted")
	m := hub.NewManager(&hub.Client{Endpoint: fh.URL()}, hub.Cache{Dir: filepath.Join(t.TempDir(), "hub")}, nil, nil)
	hb := testManagerHub(m, nil)
	u, l := newTestUIWith(t, withHub(newFakeBackend(windowSnapshot()), hb))
	var tf *tokenField
	l.wait(func() {
		u.showSettings()
		if !hasText(u.settings.win.Content(), "No token") {
			t.Errorf("Settings does not say there is no token: %q", texts(u.settings.win.Content()))
		}
		tf = newTokenField(u)
		test.Type(tf.entry, "hf_granted")
		test.Tap(tf.save)
	})
	testbed.WaitFor(t, 10*time.Second, "the token saved", func() bool {
		var ok bool
		l.wait(func() { ok = strings.Contains(tf.state.Text, "Saved in") })
		return ok
	})
	if b, err := os.ReadFile(filepath.Join(home, "token")); err != nil || string(b) != "hf_granted" {
		t.Fatalf("token file: %q %v", b, err)
	}
	qs, err := hb.HubQuants(t.Context(), repo)
	if err != nil || len(qs) == 0 || qs[0].NoAccess != "" {
		t.Fatalf("a gated repo after the token was saved: %+v %v", qs, err)
	}
	l.wait(func() { u.settings.win.Close() })
}

// A download the Hub refused for a gated repo says so, and its Hugging Face token… button opens
// Settings at the token field, with the cursor in it.
func TestGatedDownloadOpensTokenField(t *testing.T) {
	m := hub.NewManager(&hub.Client{Endpoint: "http://127.0.0.1:1"}, hub.Cache{Dir: filepath.Join(t.TempDir(), "hub")}, nil, nil)
	s := windowSnapshot()
	s.Downloads = []hub.PullStatus{{Model: "Org/Gated-GGUF:Q4_K_M", State: hub.StateFailed, Progress: hub.Progress{Done: 1 << 20, Total: 4 << 20},
		Error: "Org/Gated-GGUF: the Hub refused (HTTP 403): gated or private repo"}}
	u, l := newTestUIWith(t, withHub(newFakeBackend(s), testManagerHub(m, nil)))
	l.wait(func() {
		d := newDownloadsSection(u)
		d.update(s)
		if !hasText(d.box, "Hugging Face token field") {
			t.Errorf("the refused download does not point to the token field: %q", texts(d.box))
		}
		test.Tap(findButton(t, d.box, "Hugging Face token…"))
		if u.settings == nil {
			t.Fatal("Hugging Face token… did not open Settings")
		}
		if got := u.settings.win.Canvas().Focused(); got != u.settings.token.entry {
			t.Errorf("Settings opened with the focus on %T, want the token field", got)
		}
	})
}
