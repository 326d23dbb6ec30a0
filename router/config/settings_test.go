package config

import (
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"
	"time"

	"github.com/adrg/xdg"
)

func TestModelSettings(t *testing.T) {
	gl, ml := 10, 0
	sleep := Duration(time.Minute)
	c := Default()
	c.IdleSleep, c.IdleUnload = Duration(3*time.Minute), Never
	c.Defaults.Args = []string{"--jinja"}
	c.Defaults.GPULayers = &gl
	c.Models = map[string]Model{
		"a": {Aliases: []string{"x"}, Args: []string{"--temp", "0"}, CtxSize: 8192, GPULayers: &ml, Pinned: true, IdleSleep: &sleep},
	}

	got := c.ModelSettings("a")
	want := Model{
		Aliases: []string{"x"}, Args: []string{"--jinja", "--temp", "0"}, CtxSize: 8192, GPULayers: &ml,
		Pinned: true, IdleSleep: &sleep, IdleUnload: ptr(Never), FlashAttn: "auto",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ModelSettings(a) = %+v, want %+v", got, want)
	}

	other := c.ModelSettings("not-configured")
	wantOther := Model{Args: []string{"--jinja"}, CtxSize: 4096, GPULayers: &gl, IdleSleep: ptr(c.IdleSleep), IdleUnload: ptr(Never), FlashAttn: "auto"}
	if !reflect.DeepEqual(other, wantOther) {
		t.Errorf("ModelSettings(unknown) = %+v, want %+v", other, wantOther)
	}

	// flash_attn, parallel and cache_type of a model win over [defaults].
	c.Defaults.Parallel = 2
	c.Models["b"] = Model{FlashAttn: "on", Parallel: 4, CacheType: "q8_0"}
	if b := c.ModelSettings("b"); b.FlashAttn != "on" || b.Parallel != 4 || b.CacheType != "q8_0" {
		t.Errorf("ModelSettings(b) = %+v", b)
	}
	if u := c.ModelSettings("not-configured"); u.Parallel != 2 || u.CacheType != "" {
		t.Errorf("ModelSettings(unknown) with [defaults].parallel = %+v", u)
	}

	// The result shares nothing with the config.
	got.Args[0] = "changed"
	*got.GPULayers = 99
	*got.IdleSleep = 0
	if c.Defaults.Args[0] != "--jinja" || ml != 0 || sleep != Duration(time.Minute) {
		t.Error("ModelSettings returned memory shared with the config")
	}
}

// setHome points the home and XDG directories at a temporary folder for one test.
func setHome(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	t.Cleanup(xdg.Reload) // registered first, so it runs after the variables are restored
	t.Setenv("HOME", home)
	t.Setenv("USERPROFILE", home)
	for _, v := range []string{"XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "LLAMA_CACHE", "HF_HOME", "HF_HUB_CACHE", "LOCALAPPDATA", "OLLAMA_MODELS"} {
		t.Setenv(v, "")
		os.Unsetenv(v)
	}
	service := ollamaServiceDir
	ollamaServiceDir = filepath.Join(home, "service", ".ollama", "models") // not this machine's Ollama service
	t.Cleanup(func() { ollamaServiceDir = service })
	xdg.Reload()
	return home
}

func TestPaths(t *testing.T) {
	home := setHome(t)
	cfgHome := filepath.Join(home, "cfg")
	t.Setenv("XDG_CONFIG_HOME", cfgHome)
	t.Setenv("XDG_STATE_HOME", filepath.Join(home, "state"))
	t.Setenv("XDG_DATA_HOME", filepath.Join(home, "data"))
	xdg.Reload()

	p, err := Path()
	if err != nil {
		t.Fatal(err)
	}
	if xdgLinux() && p != filepath.Join(cfgHome, "llamatray", "config.toml") {
		t.Errorf("Path() = %s", p)
	}
	if _, err := os.Stat(filepath.Dir(p)); !os.IsNotExist(err) {
		t.Errorf("Path() created its folder: %v", err)
	}
	for name, f := range map[string]func() (string, error){"StateDir": StateDir, "LogDir": LogDir, "DataModelsDir": DataModelsDir} {
		d, err := f()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if st, err := os.Stat(d); err != nil || !st.IsDir() {
			t.Errorf("%s() = %s, not created: %v", name, d, err)
		}
	}
	if xdgLinux() {
		if d, _ := DataModelsDir(); d != filepath.Join(home, "data", "llamatray", "models") {
			t.Errorf("DataModelsDir() = %s", d)
		}
		if d, _ := LogDir(); d != filepath.Join(home, "state", "llamatray", "logs") {
			t.Errorf("LogDir() = %s", d)
		}
	}
}

func xdgLinux() bool { return filepath.Separator == '/' && !isDarwin() }

func TestModelDirsResolved(t *testing.T) {
	home := setHome(t)
	lm := filepath.Join(home, ".lmstudio", "models")
	hf := filepath.Join(home, "hfcache")
	llama := filepath.Join(home, "llamacache")
	for _, d := range []string{lm, hf, llama} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("HF_HUB_CACHE", hf)
	t.Setenv("LLAMA_CACHE", llama)

	c := Default()
	c.ModelDirs = []string{"~/mine", "/srv/models/", "~/mine"}
	got := c.ModelDirsResolved()
	want := []string{filepath.Join(home, "mine"), filepath.Clean("/srv/models"), lm, llama, hf}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ModelDirsResolved() =\n %v\nwant\n %v", got, want)
	}

	c.ScanDefaultDirs = false
	if got := c.ModelDirsResolved(); !reflect.DeepEqual(got, want[:2]) {
		t.Errorf("without default dirs: %v", got)
	}
}

func TestExpandHome(t *testing.T) {
	home := setHome(t)
	for in, want := range map[string]string{
		"~":          home,
		"~/models":   filepath.Join(home, "models"),
		"/abs":       "/abs",
		"rel/~":      "rel/~",
		"~other/dir": "~other/dir",
	} {
		if got := ExpandHome(in); got != want {
			t.Errorf("ExpandHome(%q) = %q, want %q", in, got, want)
		}
	}
}

func isDarwin() bool { return runtime.GOOS == "darwin" }
