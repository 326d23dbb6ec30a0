package app

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2/test"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/testbed"
)

func TestSettingsValuesRoundTrip(t *testing.T) {
	base := config.Default()
	base.ModelDirs = []string{"/models"}
	base.APIKeys = []string{"secret"} // not in the window: must survive
	base.Models = map[string]config.Model{"qwen": {Pinned: true}}
	v := valuesFrom(base, true)
	if v.Port != "8080" || v.MemoryLimit != "" || v.MemoryReserve != "1GiB" || v.IdleSleep != "5m" || v.GPULayers != "" || !v.Autostart {
		t.Fatalf("values from the default config: %+v", v)
	}
	got, errs := v.apply(base)
	if errs != nil {
		t.Fatalf("unchanged values do not apply: %v", errs)
	}
	if got.Listen != base.Listen || got.MemoryReserve != base.MemoryReserve || got.IdleUnload != base.IdleUnload ||
		got.Defaults.CtxSize != base.Defaults.CtxSize || got.APIKeys[0] != "secret" || !got.Models["qwen"].Pinned {
		t.Errorf("round trip changed the config: %+v", got)
	}

	v.Port, v.MemoryLimit, v.GPULayers, v.IdleSleep, v.QueueTimeout = "9090", "24GiB", "all", "0", "-1"
	v.Presets = " /etc/llama/presets.ini "
	v.ModelDirs = []string{"/models", "  ", "/more"}
	got, errs = v.apply(base)
	if errs != nil {
		t.Fatal(errs)
	}
	if got.Listen != "127.0.0.1:9090" || got.MemoryLimit != 24*config.GiB || got.Defaults.GPULayers == nil ||
		*got.Defaults.GPULayers != -1 || got.IdleSleep != 0 || got.QueueTimeout != config.Never ||
		strings.Join(got.ModelDirs, ",") != "/models,/more" || got.Presets != "/etc/llama/presets.ini" {
		t.Errorf("applied: %+v", got)
	}
	if again := valuesFrom(got, false); again.GPULayers != "all" || again.MemoryLimit != "24GiB" || again.Port != "9090" ||
		again.Presets != "/etc/llama/presets.ini" || again.fieldTexts()[keyPresets] != again.Presets {
		t.Errorf("values read back: %+v", again)
	}
}

func TestSettingsValuesErrors(t *testing.T) {
	v := valuesFrom(config.Default(), false)
	v.Port, v.MemoryLimit, v.MaxLoaded, v.IdleUnload, v.CtxSize, v.GPULayers = "http", "lots", "-2", "30", "4k", "many"
	_, errs := v.apply(config.Default())
	for _, key := range []string{keyListen, keyMemoryLimit, keyMaxLoaded, keyIdleUnload, keyCtxSize, keyGPULayers} {
		if errs[key] == nil {
			t.Errorf("no error for %s", key)
		}
	}
	if len(errs) != 6 {
		t.Errorf("errors = %v", errs)
	}
}

func TestFieldErrors(t *testing.T) {
	c := config.Default()
	c.MemoryLimit = 4 * config.GiB
	c.MemoryReserve = 8 * config.GiB
	c.APIKeys = []string{""}
	err := c.Validate()
	if err == nil {
		t.Fatal("config with reserve above the limit validated")
	}
	shown := map[string]bool{keyMemoryReserve: true, keyMemoryLimit: true}
	byKey, other := fieldErrors(fmt.Errorf("config: not saved: %w", err), shown)
	if byKey[keyMemoryReserve] == nil || !strings.Contains(byKey[keyMemoryReserve].Error(), "reserve must be smaller") {
		t.Errorf("memory_reserve error = %v", byKey[keyMemoryReserve])
	}
	for _, e := range other {
		var fe *config.FieldError
		if !errors.As(e, &fe) || shown[strings.Join(fe.Key, ".")] {
			t.Errorf("unexpected other error %v", e)
		}
	}
	if _, other := fieldErrors(errors.New("config: save /x: permission denied"), shown); len(other) != 1 {
		t.Errorf("plain error not kept: %v", other)
	}
}

func TestSettingsWindowValidatesSavesAndApplies(t *testing.T) {
	u, fb, l := newTestUI(t, windowSnapshot())
	var s *settingsWindow
	l.wait(func() { u.showSettings(); s = u.settings })
	set := func(key, text string) { l.wait(func() { s.entries[key].SetText(text) }) }
	errText := func(key string) (text string) {
		l.wait(func() {
			if s.errLabels[key].Visible() {
				text = s.errLabels[key].Text
			}
		})
		return
	}

	// A value that does not parse is shown under its field and nothing is saved.
	set(keyListen, "99999")
	l.wait(func() { test.Tap(s.save) })
	if got := errText(keyListen); !strings.Contains(got, "not a port number") {
		t.Errorf("port error = %q", got)
	}
	// A value that parses but does not validate (config.Validate) is shown the same way.
	set(keyListen, "8181")
	set(keyMemoryLimit, "4GiB")
	set(keyMemoryReserve, "8GiB")
	l.wait(func() { test.Tap(s.save) })
	if errText(keyListen) != "" {
		t.Error("fixed port still shows an error")
	}
	if got := errText(keyMemoryReserve); !strings.Contains(got, "reserve must be smaller") {
		t.Errorf("reserve error = %q", got)
	}
	fb.mu.Lock()
	applied := len(fb.applied)
	fb.mu.Unlock()
	if applied != 0 {
		t.Fatal("an invalid configuration was applied")
	}

	set(keyMemoryReserve, "2GiB")
	set(keyMemoryLimit, "24GiB")
	set(keyGPULayers, "all")
	set(keyIdleSleep, "10m")
	l.wait(func() {
		s.autostart.SetChecked(true)
		s.ollama.SetChecked(true)
		s.dirs = append(s.dirs, "/srv/models")
		s.refreshDirs()
		test.Tap(s.save)
	})
	testbed.WaitFor(t, 10*time.Second, "the save", func() bool {
		var text string
		l.wait(func() { text = s.general.Text })
		// A model runs: it keeps what its llama-server was started with, and the window says so.
		return strings.HasPrefix(text, "Saved. Running now, ") && strings.Contains(text, "the old GPU layers and sleep when idle until loaded again")
	})
	cfg := fb.Config()
	if cfg.Listen != "127.0.0.1:8181" || cfg.MemoryLimit != 24*config.GiB || cfg.MemoryReserve != 2*config.GiB ||
		cfg.Defaults.GPULayers == nil || *cfg.Defaults.GPULayers != -1 || cfg.IdleSleep.Std() != 10*time.Minute ||
		strings.Join(cfg.ModelDirs, ",") != "/srv/models" || !cfg.OllamaPort {
		t.Errorf("applied config: %+v", cfg)
	}
	if !u.auto.enabled() {
		t.Error("start at login was not turned on")
	}
	for _, k := range []string{keyListen, keyMemoryReserve} {
		if e := errText(k); e != "" {
			t.Errorf("%s still shows %q after a good save", k, e)
		}
	}
}

// The settings window says whether Ollama's port answers, and why not when it is taken.
func TestSettingsWindowShowsOllamaPort(t *testing.T) {
	snap := windowSnapshot()
	snap.OllamaErr = "cannot also listen on Ollama's port 127.0.0.1:11434 (is Ollama itself running? quit it, or turn ollama_port off): address already in use"
	u, _, l := newTestUI(t, snap)
	var text string
	l.wait(func() { u.showSettings(); text = u.settings.ollamaIn.Text })
	if !strings.Contains(text, "is Ollama itself running") {
		t.Errorf("taken port: %q", text)
	}
	snap.OllamaErr, snap.OllamaAddr = "", "127.0.0.1:11434"
	l.wait(func() { u.settings.update(snap); text = u.settings.ollamaIn.Text })
	if !strings.Contains(text, "http://127.0.0.1:11434") {
		t.Errorf("answering: %q", text)
	}
}

// Importing llama-swap's config.yaml from the settings window goes through the one configuration
// writer, says what was left out and why, and shows the fields it changed; a file that does not
// read changes nothing and says why.
func TestSettingsWindowImportsLlamaSwap(t *testing.T) {
	u, fb, l := newTestUI(t, windowSnapshot())
	var s *settingsWindow
	l.wait(func() { u.showSettings(); s = u.settings })
	general := func() (text string) {
		l.wait(func() { text = s.general.Text })
		return
	}

	l.wait(func() { s.importLlamaSwap("bad.yaml", []byte("models: [unclosed")) })
	testbed.WaitFor(t, 10*time.Second, "the bad import's error", func() bool { return strings.HasPrefix(general(), "Nothing was imported: bad.yaml") })
	fb.mu.Lock()
	applied := len(fb.applied)
	fb.mu.Unlock()
	if applied != 0 {
		t.Fatal("a file that does not read changed the configuration")
	}

	const path = "../router/config/testdata/llama-swap.yaml"
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	l.wait(func() { s.entries[keyCtxSize].SetText("8192") }) // an edit not saved yet stays
	l.wait(func() { s.importLlamaSwap(path, data) })
	testbed.WaitFor(t, 10*time.Second, "the import", func() bool { return strings.HasPrefix(general(), "Imported llama-swap's models from "+path) })
	text := general()
	for _, want := range []string{"Not carried over:", "model vllm:", "group always:"} {
		if !strings.Contains(text, want) {
			t.Errorf("import result lacks %q: %q", want, text)
		}
	}
	cfg := fb.Config()
	if _, ok := cfg.Section("Llama-3.2-3B-Q4_K_M"); !ok {
		t.Errorf("imported configuration has no model Llama-3.2-3B-Q4_K_M: %+v", cfg.Models)
	}
	if !slices.Contains(cfg.ModelDirs, "/models/Llama-3.2-3B-Q4_K_M.gguf") || cfg.IdleUnload.Std() != 15*time.Minute {
		t.Errorf("imported configuration: dirs %v, idle unload %v", cfg.ModelDirs, cfg.IdleUnload)
	}
	l.wait(func() {
		if got := s.entries[keyIdleUnload].Text; got != cfg.IdleUnload.String() {
			t.Errorf("unload when idle field = %q after the import, want %q", got, cfg.IdleUnload)
		}
		if !slices.Equal(s.dirs, cfg.ModelDirs) {
			t.Errorf("model folders shown = %v, want %v", s.dirs, cfg.ModelDirs)
		}
		if got := s.entries[keyCtxSize].Text; got != "8192" {
			t.Errorf("an unsaved edit was lost: context size = %q", got)
		}
	})
}
