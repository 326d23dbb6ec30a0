package app

import (
	"path/filepath"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/widget"

	"github.com/llamatray/llamatray/router/catalog"
	"github.com/llamatray/llamatray/router/hub"
	"github.com/llamatray/llamatray/router/service"
	"github.com/llamatray/llamatray/router/testbed/fakehub"
)

// screensBackend is the fake with a Hub (never reached) and a snapshot: what the window shows with
// downloads, banners and sections.
func screensBackend(t *testing.T, s Snapshot) *fakeBackend {
	t.Helper()
	fh := fakehub.New()
	t.Cleanup(fh.Close)
	cache := hub.Cache{Dir: filepath.Join(t.TempDir(), "hub")}
	m := hub.NewManager(&hub.Client{Endpoint: fh.URL()}, cache, nil, nil)
	return withHub(newFakeBackend(s), testManagerHub(m, func(string) (catalog.Model, bool) { return catalog.Model{}, false }))
}

// The first window at a normal size (1280×900), with everything that used to come first (no
// llama-server, two downloads, lending): the models come first, the first of them in the top third
// of the window; memory is one line at the bottom. A failed load names llama-server's explaining
// line and offers its fix first; a failed download says what to do in one sentence.
func TestWindowScreens(t *testing.T) {
	s := demoSnapshot()
	s.Server.Path, s.Server.Hint = "", "Install llama.cpp's llama-server, or pick one with Locate…"
	s.Downloads = []hub.PullStatus{
		{Model: "bartowski/Qwen2.5-7B-Instruct-GGUF:Q4_K_M", State: hub.StateFailed, Progress: hub.Progress{Done: 4_680_000_000, Total: 4_680_000_000},
			Error: "bartowski/Qwen2.5-7B-Instruct-GGUF: Qwen2.5-7B-Instruct-Q4_K_M.gguf: sha256 mismatch (the Hub lists 1ab2, the download is 9f00): refused and deleted"},
		{Model: "ggml-org/gemma-3-1b-it-GGUF:Q4_K_M", State: hub.StateFailed, Progress: hub.Progress{Done: 310_000_000, Total: 806_000_000},
			Error: `cannot reach the Hugging Face Hub at https://huggingface.co: the connection failed (Get "https://huggingface.co/x": dial tcp 18.0.0.1:443: connect: connection reset by peer)`},
	}
	for i, m := range s.Models {
		if m.State == service.StateFailed {
			s.Models[i].Cause, s.Models[i].CauseDo, s.Models[i].Fix = loadCause([]string{
				"llama_model_load: error loading model: error loading model architecture: unknown model architecture: 'phi3v'",
				"llama_model_load_from_file_impl: failed to load model",
				"main: exiting due to model loading error",
			})
		}
	}
	fb := screensBackend(t, s)
	u, l := newTestUIWith(t, fb)
	l.wait(func() {
		u.snap = s
		u.models = newModelsWindow(u)
		u.models.show()
		u.models.win.Resize(fyne.NewSize(1280, 900))
		u.models.update(s)
	})
	l.wait(func() {
		first := u.models.list.Objects[1] // under the first group's title
		pos := fyne.CurrentApp().Driver().AbsolutePositionForObject(first)
		if pos.Y+first.Size().Height > 900/3 {
			t.Errorf("the first model row ends at y=%.0f of 900: the models do not come first", pos.Y+first.Size().Height)
		}
		if !hasText(u.models.list, "llama-server said “unknown model architecture: 'phi3v'”. This llama-server is too old for this model: pick a newer llama.cpp build in Settings…, then Retry.") {
			t.Errorf("the failed load reads %q", texts(u.models.list))
		}
		for _, line := range texts(u.models.downloads.box) {
			if strings.Contains(line, "kept") && strings.Contains(line, "deleted") || strings.Contains(line, "100%") {
				t.Errorf("a download reads %q", line)
			}
		}
	})
	shoot(t, l, u.models.win, "window-first")
	l.wait(func() { u.models.filter.SetText("phi") })
	shoot(t, l, u.models.win, "load-failed")
	l.wait(func() { u.models.filter.SetText("no such model") })
	shoot(t, l, u.models.win, "download-failed")

	// The empty state: Get models… is the first way, and the highlighted one.
	empty := Snapshot{ListenAddr: "127.0.0.1:8080", Server: service.LlamaServer{Path: "/usr/bin/llama-server"},
		ModelDirs: []string{"/home/ann/.local/share/llamatray/models", "/home/ann/.cache/huggingface/hub"},
		Budget:    service.Budget{Limit: 24 * gb, Free: 24 * gb, SystemTotal: 32 * gb, SystemAvailable: 26 * gb}}
	fb.setSnapshot(empty)
	l.wait(func() {
		u.snap = empty
		u.models.filter.SetText("")
		u.models.update(empty)
	})
	l.wait(func() {
		var buttons []*widget.Button
		collect(u.models.list, &buttons)
		if len(buttons) == 0 || buttons[0].Text != "Get models…" || buttons[0].Importance != widget.HighImportance {
			t.Errorf("the empty state's first button is %+v, want Get models…, highlighted", buttons)
		}
	})
	shoot(t, l, u.models.win, "window-empty")
}

// collect appends the buttons under o, in order.
func collect(o fyne.CanvasObject, out *[]*widget.Button) {
	switch x := o.(type) {
	case *widget.Button:
		*out = append(*out, x)
	case *fyne.Container:
		for _, c := range x.Objects {
			collect(c, out)
		}
	case *widget.Card:
		collect(x.Content, out)
	}
}
