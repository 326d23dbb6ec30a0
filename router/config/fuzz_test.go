package config

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// FuzzLoad feeds arbitrary bytes to Load through a real file. Load must not panic; a refused
// file must yield a zero Config; an accepted one must validate and come back
// unchanged from the text Save writes.
func FuzzLoad(f *testing.F) {
	f.Add([]byte(DefaultFileText()))
	full, err := fullConfig().render()
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte(full))
	for _, b := range badFiles {
		f.Add([]byte(b.text))
	}
	f.Add([]byte("\xef\xbb\xbfmax_loaded = 2\n"))
	f.Add([]byte("models.\"a\".aliases = [\"b\"]\nmodels.b = {}\n"))

	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "config.toml")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := Load(path)
		if err != nil {
			if !reflect.DeepEqual(c, Config{}) {
				t.Fatalf("refused file returned a non-zero Config")
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("Load accepted a config that does not validate: %v", err)
		}
		// What Save would write (Save adds only the atomic file write).
		text, err := c.render()
		if err != nil {
			t.Fatalf("render of a loaded config: %v", err)
		}
		again, err := Parse("saved.toml", []byte(text))
		if err != nil {
			t.Fatalf("reload of the rendered config: %v\n%s", err, text)
		}
		if !reflect.DeepEqual(again, c) {
			t.Fatalf("render/Parse changed the config:\n got %+v\nwant %+v", again, c)
		}
	})
}
