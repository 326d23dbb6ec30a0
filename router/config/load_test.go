package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// badFiles are config files Load must refuse, with what each error must say. They also seed
// FuzzLoad.
var badFiles = []struct {
	name, text string
	want       []string // substrings, one per expected error line
}{
	{"unknown top-level key", "listen = \"127.0.0.1:8080\"\nlistne = \"x\"\n",
		[]string{`c.toml:2: key "listne": unknown key; did you mean "listen"?`}},
	{"unknown keys in tables", "[defaults]\nctx = 5\n\n[models.\"a\"]\nidle_slep = \"5m\"\n",
		[]string{`c.toml:2: key "defaults.ctx": unknown key`, `c.toml:5: key "models.a.idle_slep": unknown key; did you mean "models.a.idle_sleep"?`}},
	{"unknown table", "\n[model.\"x\"]\npinned = true\n",
		[]string{`c.toml:2: key "model.x": unknown key; did you mean "models.x"?`}},
	{"bad device size", "[device_memory_limit]\nVulkan0 = \"2XB\"\n",
		[]string{`c.toml:2: key "device_memory_limit.Vulkan0": invalid size "2XB": unknown unit "XB"`}},
	{"bad size", "# c\n\nmemory_limit = \"6XB\"\n",
		[]string{`c.toml:3: key "memory_limit": invalid size "6XB": unknown unit "XB"`}},
	{"negative size string", "body_limit = \"-5MiB\"\n",
		[]string{`c.toml:1: key "body_limit": invalid size "-5MiB": sizes cannot be negative`}},
	{"float size", "memory_reserve = 1.5\n",
		[]string{`c.toml:1: key "memory_reserve": expected a quoted size like "6GiB" or a whole number of bytes, found the number 1.5`}},
	{"bad duration", "\nidle_unload = \"soon\"\n",
		[]string{`c.toml:2: key "idle_unload": invalid duration "soon"`}},
	{"unitless duration", "queue_timeout = 300\n",
		[]string{`c.toml:1: key "queue_timeout": a duration needs a unit, like "300s"`}},
	{"unitless model duration", "[models.m]\nidle_sleep = 60\n",
		[]string{`c.toml:2: key "models.m.idle_sleep": a duration needs a unit`}},
	{"float duration", "[models.m]\nidle_unload = 1.5\n",
		[]string{`c.toml:2: key "models.m.idle_unload": expected a quoted duration like "5m", found the number 1.5`}},
	{"bool duration", "fair_wait = true\n",
		[]string{`c.toml:1: key "fair_wait": expected a quoted duration like "5m", found true`}},
	{"wrong type", "\n\nlisten = 8080\n",
		[]string{`c.toml:3: key "listen": expected a quoted string, found an integer`}},
	{"string for list", "model_dirs = \"~/models\"\n",
		[]string{`c.toml:1: key "model_dirs": expected a list of strings`}},
	{"string for number", "[defaults]\nctx_size = \"big\"\n",
		[]string{`c.toml:2: key "defaults.ctx_size": expected a whole number, found a string`}},
	{"syntax error", "listen = \"127.0.0.1:8080\"\nmax_loaded = = 2\n",
		[]string{`c.toml:2: `}},
	{"unterminated string", "log_level = \"info\n",
		[]string{`c.toml:1: `}},
	{"duplicate key", "max_loaded = 1\nmax_loaded = 2\n",
		[]string{`c.toml:2: `}},
	{"bad listen", "\nlisten = \"localhost\"\n",
		[]string{`c.toml:2: key "listen": "localhost" is not host:port`}},
	{"bad flash_attn", "[defaults]\nctx_size = 8192\nflash_attn = \"yes\"\n",
		[]string{`c.toml:3: key "defaults.flash_attn": "yes" is not allowed`}},
	{"reserve over limit", "memory_limit = \"4GiB\"\nmemory_reserve = \"4GiB\"\n",
		[]string{`c.toml:2: key "memory_reserve": 4GiB leaves nothing of memory_limit 4GiB`}},
	{"several validation errors", "log_level = \"loud\"\nmax_loaded = -1\n[models.\"a b\"]\nctx_size = -5\n",
		[]string{`c.toml:1: key "log_level": "loud" is not a log level`, `c.toml:2: key "max_loaded": must not be negative`, `c.toml:4: key "models.a b.ctx_size": must not be negative`}},
	{"inline table model", "models = { m = { gpu_layers = -7 } }\n",
		[]string{`c.toml:1: key "models.m.gpu_layers": must be -1 (all layers) or more`}},
	{"dotted key model", "models.m.args = [\"--port\", \"9\"]\n",
		[]string{`c.toml:1: key "models.m.args": --port is set by Llamatray`}},
	{"alias clash", "[models.a]\naliases = [\"x\"]\n[models.b]\naliases = [\"x\", \"a\"]\n",
		[]string{`c.toml:4: key "models.b.aliases": alias "x" is also an alias of "a"`, `c.toml:4: key "models.b.aliases": alias "a" is the ID of another model`}},
	{"zero timeout", "load_timeout = \"0\"\n",
		[]string{`c.toml:1: key "load_timeout": must not be 0; use "-1" for no limit`}},
	{"array table", "[[models]]\nx = 1\n",
		[]string{`c.toml:1: key "models": `}},
}

func TestLoadErrors(t *testing.T) {
	for _, tt := range badFiles {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse("c.toml", []byte(tt.text))
			if err == nil {
				t.Fatalf("accepted:\n%s", tt.text)
			}
			if !reflect.DeepEqual(c, Config{}) {
				t.Errorf("a refused file returned a non-zero Config: %+v", c)
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != len(tt.want) {
				t.Fatalf("got %d errors, want %d:\n%v", len(lines), len(tt.want), err)
			}
			for i, want := range tt.want {
				if !strings.HasPrefix(lines[i], want) {
					t.Errorf("error %d:\n got %q\nwant prefix %q", i, lines[i], want)
				}
			}
			var ce *Error
			if !errors.As(err, &ce) || ce.Line == 0 {
				t.Errorf("want an *Error with a line, got %#v", err)
			}
		})
	}
}

func TestLoadThroughFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(path, []byte("\n\nlisten = \"x\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	if err == nil || !strings.HasPrefix(err.Error(), path+":3: key \"listen\": ") {
		t.Fatalf("Load error = %v, want %s:3: key \"listen\": ...", err, path)
	}
}

func TestLoadMissingWritesDefaultFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "dir", "config.toml")
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c, Default()) {
		t.Errorf("Load of a missing file = %+v, want Default()", c)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("default file not written: %v", err)
	}
	if string(data) != DefaultFileText() {
		t.Error("written file differs from DefaultFileText()")
	}
	again, err := Load(path)
	if err != nil {
		t.Fatalf("Load of the written default file: %v", err)
	}
	if !reflect.DeepEqual(again, Default()) {
		t.Errorf("default file loads as %+v, want Default()", again)
	}
}

func TestLoadMissingUnwritable(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs /proc, where nothing can be created even by root")
	}
	c, err := Load("/proc/self/llamatray-test/config.toml")
	var dfe *DefaultFileError
	if !errors.As(err, &dfe) {
		t.Fatalf("err = %v, want *DefaultFileError", err)
	}
	if !reflect.DeepEqual(c, Default()) {
		t.Error("want Default() together with a DefaultFileError")
	}
}

func TestDefaultFileText(t *testing.T) {
	text := DefaultFileText()
	c, err := Parse("default", []byte(text))
	if err != nil {
		t.Fatalf("the default file does not load: %v\n%s", err, text)
	}
	if !reflect.DeepEqual(c, Default()) {
		t.Errorf("default file = %+v\nwant %+v", c, Default())
	}
	for _, key := range knownKeys(reflect.TypeOf(Config{})) {
		if !strings.Contains(text, "\n"+key+" = ") && !strings.Contains(text, "\n["+key) && !strings.Contains(text, "# ["+key) {
			t.Errorf("default file does not mention %s", key)
		}
	}
	for _, key := range knownKeys(reflect.TypeOf(ChildDefaults{})) {
		if !strings.Contains(text, key+" = ") {
			t.Errorf("default file does not mention defaults.%s", key)
		}
	}
	for _, key := range knownKeys(reflect.TypeOf(Model{})) {
		if key == "variants" { // a table
			if !strings.Contains(text, ".variants.\"32k\"]") {
				t.Error("default file's model example does not show a variant")
			}
			continue
		}
		if !strings.Contains(text, "# "+key+" = ") {
			t.Errorf("default file's model example does not mention %s", key)
		}
	}
}

func TestLoadEmptyAndBOM(t *testing.T) {
	for _, text := range []string{"", "\n# only comments\n", "\xef\xbb\xbf# saved by Notepad\nmax_loaded = 2\n"} {
		c, err := Parse("c.toml", []byte(text))
		if err != nil {
			t.Fatalf("Parse(%q): %v", text, err)
		}
		want := Default()
		if strings.Contains(text, "max_loaded") {
			want.MaxLoaded = 2
		}
		if !reflect.DeepEqual(c, want) {
			t.Errorf("Parse(%q) = %+v, want %+v", text, c, want)
		}
	}
}

func TestLoadNotAFile(t *testing.T) {
	dir := t.TempDir()
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("Load(dir) = %v, want a directory error", err)
	}
	big := filepath.Join(dir, "big.toml")
	if err := os.WriteFile(big, []byte("# "+strings.Repeat("x", maxFileSize)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(big); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("Load(big) = %v, want a size error", err)
	}
}

// fullConfig sets every field to a non-default value.
func fullConfig() Config {
	gl, ml := 20, -1
	sleep, unload := Duration(10*time.Minute), Never
	return Config{
		Listen:                "[::1]:9090",
		ModelDirs:             []string{"~/models", `C:\Models\with "quotes"`, "/tmp/üñî\tcode"},
		ScanDefaultDirs:       false,
		LlamaServer:           "/opt/llama/bin/llama-server",
		MemoryLimit:           48 * GiB,
		MemoryReserve:         1536 * MiB,
		MaxLoaded:             3,
		IdleSleep:             Never,
		IdleUnload:            0,
		QueueTimeout:          Never,
		FairWait:              Duration(45 * time.Second),
		LoadTimeout:           Duration(90 * time.Second),
		StopTimeout:           Duration(1500 * time.Millisecond),
		DefaultModel:          "qwen",
		StreamLoadingProgress: true,
		BodyLimit:             100_000_000,
		APIKeys:               []string{"sk-one", "sk-two"},
		AllowedHosts:          []string{"mybox.lan"},
		CORSOrigins:           []string{"http://localhost:3000", "*"},
		LogLevel:              "debug",
		DeviceMemoryLimit:     map[string]Size{"Vulkan0": 1536 * MiB, "CUDA1": 12 * GiB},
		Defaults: ChildDefaults{
			CtxSize:   0,
			GPULayers: &gl,
			FlashAttn: "on",
			Parallel:  2,
			Args:      []string{"--cache-type-k", "q8_0"},
		},
		Models: map[string]Model{
			"qwen2.5-7b-instruct-q4_k_m": {Aliases: []string{"qwen", "q"}, CtxSize: 32768, GPULayers: &ml, Pinned: true, LoadOnStart: true, IdleSleep: &sleep, IdleUnload: &unload},
			"org/name/model":             {Args: []string{"--jinja"}, Hidden: true, FlashAttn: "off", Parallel: 3, CacheType: "q4_0"},
			"weird \"id\" \\ \x01":       {},
		},
	}
}

func TestSaveLoadRoundTrip(t *testing.T) {
	for name, c := range map[string]Config{"default": Default(), "full": fullConfig()} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "config.toml")
			if err := c.Save(path); err != nil {
				t.Fatal(err)
			}
			got, err := Load(path)
			if err != nil {
				data, _ := os.ReadFile(path)
				t.Fatalf("Load after Save: %v\n%s", err, data)
			}
			if !reflect.DeepEqual(got, c) {
				t.Errorf("round trip:\n got %+v\nwant %+v", got, c)
			}
			st, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if runtime.GOOS != "windows" && st.Mode().Perm() != 0o600 { // Windows has no mode bits but read-only
				t.Errorf("mode %v, want 0600", st.Mode().Perm())
			}
			entries, _ := os.ReadDir(dir)
			if len(entries) != 1 {
				t.Errorf("Save left extra files: %v", entries)
			}
		})
	}
}

func TestSaveRefusesBadConfigAndKeepsFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.toml")
	if err := Default().Save(path); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)

	bad := Default()
	bad.Defaults.FlashAttn = "maybe"
	if err := bad.Save(path); err == nil || !strings.Contains(err.Error(), `key "defaults.flash_attn"`) {
		t.Errorf("Save(invalid) = %v, want a validation error", err)
	}
	invalidUTF8 := Default()
	invalidUTF8.ModelDirs = []string{"\xff\xfe"}
	if err := invalidUTF8.Save(path); err == nil || !strings.Contains(err.Error(), "UTF-8") {
		t.Errorf("Save(invalid UTF-8) = %v, want an error", err)
	}
	after, _ := os.ReadFile(path)
	if string(before) != string(after) {
		t.Error("a refused Save changed the file")
	}
}

func TestSaveThroughSymlink(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "dotfiles", "llamatray.toml")
	if err := Default().Save(real); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "config.toml")
	if err := os.Symlink(real, link); err != nil {
		t.Skipf("symlinks unavailable: %v", err)
	}
	c := Default()
	c.MaxLoaded = 7
	if err := c.Save(link); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the symlink was replaced: %v", err)
	}
	got, err := Load(real)
	if err != nil || got.MaxLoaded != 7 {
		t.Fatalf("target not updated: %v, %v", got.MaxLoaded, err)
	}
}

// models_autoload is on unless the file turns it off, as llama.cpp's router's --models-autoload.
func TestModelsAutoloadKey(t *testing.T) {
	if !Default().ModelsAutoload {
		t.Fatal("autoload is off by default")
	}
	c, err := Parse("c.toml", []byte("models_autoload = false\n"))
	if err != nil || c.ModelsAutoload {
		t.Fatalf("%+v %v", c.ModelsAutoload, err)
	}
	if !strings.Contains(DefaultFileText(), "\nmodels_autoload = true\n") {
		t.Fatal("the default file does not show models_autoload")
	}
}

// A model's tags are read, kept through a save, and a tag with a comma is refused at its line.
func TestModelTags(t *testing.T) {
	c, err := Parse("c.toml", []byte("[models.m]\ntags = [\"chat\", \"tiny\"]\n"))
	if err != nil || !slices.Equal(c.ModelSettings("m").Tags, []string{"chat", "tiny"}) {
		t.Fatalf("%+v %v", c.Models, err)
	}
	path := filepath.Join(t.TempDir(), "c.toml")
	if err := c.Save(path); err != nil {
		t.Fatal(err)
	}
	if back, err := Load(path); err != nil || !reflect.DeepEqual(back, c) {
		t.Fatalf("%+v %v", back.Models, err)
	}
	_, err = Parse("c.toml", []byte("[models.m]\n\ntags = [\"a,b\"]\n"))
	if err == nil || !strings.Contains(err.Error(), `c.toml:3: key "models.m.tags"`) {
		t.Fatalf("%v", err)
	}
}
