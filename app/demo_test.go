package app

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	fyneapp "fyne.io/fyne/v2/app"
	"fyne.io/fyne/v2/widget"

	"github.com/llamatray/llamatray/app/platform"
	"github.com/llamatray/llamatray/router/catalog"
	"github.com/llamatray/llamatray/router/service"
	"github.com/llamatray/llamatray/router/view"
)

// TestMain runs the tests, or, with LLAMATRAY_DEMO set, the real Fyne app over a fake backend so the
// windows can be looked at on a display (Fyne needs the main goroutine, which only TestMain has):
//
//	LLAMATRAY_DEMO=models|settings|logs|menu|empty go test ./app/ -run '^$'
func TestMain(m *testing.M) {
	if demo := os.Getenv("LLAMATRAY_DEMO"); demo != "" {
		runDemo(demo)
		return
	}
	os.Exit(m.Run())
}

func demoSnapshot() Snapshot {
	at := time.Now()
	s := Snapshot{
		ListenAddr: "127.0.0.1:8080", Server: service.LlamaServer{Path: "/usr/local/bin/llama-server", Source: "PATH", Version: "b6890"},
		ModelDirs: []string{"/home/ann/.local/share/llamatray/models", "/home/ann/.cache/llama.cpp"},
		LogDir:    os.TempDir(),
		Budget: service.Budget{Limit: 24 * gb, Used: 9_300_000_000, Free: 14_700_000_000, Reserve: 2 * gb,
			SystemTotal: 32 * gb, SystemAvailable: 17 * gb, MaxLoaded: 3, Loaded: 2},
	}
	add := func(id string, st service.State, q string, params int64, arch string, est int64, mod func(*Model)) {
		m := Model{Model: view.Model{ModelStatus: service.ModelStatus{ID: id, State: st, EstimateBytes: est, Path: "/home/ann/models/" + id + ".gguf"},
			Meta: &catalog.Model{Quantization: q, Parameters: params, Architecture: arch, SizeBytes: est * 8 / 10}, CtxSize: 4096}}
		if mod != nil {
			mod(&m)
		}
		s.Models = append(s.Models, m)
	}
	add("qwen2.5-7b-instruct", service.StateLoaded, "Q4_K_M", 7_600_000_000, "qwen2", 5_200_000_000, func(m *Model) {
		m.Active, m.Queued, m.MemoryBytes, m.LastUsed = 2, 1, 5_400_000_000, at.Add(-10*time.Second)
	})
	add("llama-3.2-3b-instruct", service.StateLoading, "Q8_0", 3_200_000_000, "llama", 3_900_000_000, func(m *Model) { m.Progress = 0.42 })
	add("gemma-2-2b-it", service.StateSleeping, "Q4_K_M", 2_600_000_000, "gemma2", 2_100_000_000, func(m *Model) {
		m.Pinned, m.LastUsed = true, at.Add(-14*time.Minute)
	})
	add("phi-3-mini", service.StateFailed, "Q4_0", 3_800_000_000, "phi3", 2_600_000_000, func(m *Model) {
		m.Error = "llama-server exited with code 1: error loading model: unknown model architecture 'phi3v'"
	})
	add("mistral-7b-instruct-v0.3", service.StateUnloaded, "Q5_K_M", 7_200_000_000, "llama", 5_800_000_000, func(m *Model) { m.LastUsed = at.Add(-50 * time.Hour) })
	add("llama-3.1-70b-instruct", service.StateUnloaded, "Q4_K_M", 70_000_000_000, "llama", 43_000_000_000, nil)
	add("smollm2-360m", service.StateUnloaded, "F16", 362_000_000, "llama", 900_000_000, nil)
	sortModels(s.Models)
	return s
}

func runDemo(demo string) {
	a := fyneapp.NewWithID(platform.AppID + ".demo")
	a.SetIcon(appIcon)
	s := demoSnapshot()
	switch demo {
	case "empty":
		s = Snapshot{ListenAddr: "127.0.0.1:8080", ListenErr: "127.0.0.1:8080 is already in use by another program",
			Server:    service.LlamaServer{Hint: "Install llama.cpp: download a release from https://github.com/ggml-org/llama.cpp/releases and put llama-server on your PATH, or choose it with Locate…"},
			ModelDirs: []string{"/home/ann/.local/share/llamatray/models", "/home/ann/.cache/huggingface/hub"},
			Budget:    service.Budget{Limit: 24 * gb, Free: 24 * gb, SystemTotal: 32 * gb, SystemAvailable: 26 * gb, Reserve: gb}}
	}
	fb := newFakeBackend(s)
	fb.dir = os.TempDir()
	fb.setLogs("qwen2.5-7b-instruct", demoLogs()...)
	var autoMu sync.Mutex // guards autoOn
	autoOn := true
	u := newUI(a, fb, slog.Default(), autostarter{
		enabled: func() bool { autoMu.Lock(); defer autoMu.Unlock(); return autoOn },
		set:     func(on bool) error { autoMu.Lock(); defer autoMu.Unlock(); autoOn = on; return nil },
	})
	u.snap = fb.Snapshot()
	u.snap.Autostart = true
	u.models = newModelsWindow(u)
	u.apply(u.snap)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a.Lifecycle().SetOnStarted(func() {
		switch demo {
		case "settings":
			u.showSettings()
		case "logs":
			u.showLogs("qwen2.5-7b-instruct")
		case "menu":
			w := a.NewWindow("Tray menu (as data)")
			w.SetContent(widget.NewMenu(fyne.NewMenu("", u.fyneItems(BuildMenu(u.snap))...)))
			w.Resize(fyne.NewSize(520, 560))
			w.Show()
		default:
			u.showModels()
		}
	})
	go u.watch(ctx)
	go demoProgress(ctx, fb)
	a.Run()
}

// demoProgress advances the loading model, as engine events would.
func demoProgress(ctx context.Context, fb *fakeBackend) {
	tick := time.NewTicker(700 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		s := fb.Snapshot()
		for i := range s.Models {
			if s.Models[i].State == service.StateLoading && s.Models[i].Progress < 0.95 {
				s.Models[i].Progress += 0.05
			}
		}
		fb.setSnapshot(s)
		select {
		case fb.events <- service.Event{Kind: "state", Model: "llama-3.2-3b-instruct", State: service.StateLoading}:
		default:
		}
	}
}

func demoLogs() []string {
	var out []string
	for i := 0; i < 60; i++ {
		out = append(out, fmt.Sprintf("srv  log_server_r: request: POST /v1/chat/completions 127.0.0.1 200 (slot %d, %d tokens, %.1f t/s)", i%4, 100+i*7, 38.5-float64(i%5)))
	}
	return append([]string{
		"build: 6890 (a1b2c3d) with cc (Debian 12.2.0-14) for x86_64-linux-gnu",
		"llama_model_loader: loaded meta data with 29 key-value pairs and 339 tensors",
		"main: model loaded",
		"main: server is listening on http://127.0.0.1:41234",
	}, out...)
}
