package config

import (
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"testing"
)

func TestOllamaDirs(t *testing.T) {
	home := setHome(t)
	var service []string
	if runtime.GOOS == "linux" {
		service = []string{ollamaServiceDir}
	}
	mine := filepath.Join(home, "ollama-store")
	tests := []struct {
		name string
		env  map[string]string
		want []string
	}{
		{"unset: the home folder's", nil, append([]string{filepath.Join(home, ".ollama", "models")}, service...)},
		{"OLLAMA_MODELS replaces it", map[string]string{"OLLAMA_MODELS": mine}, append([]string{mine}, service...)},
		{"as Ollama reads it: quotes and spaces dropped", map[string]string{"OLLAMA_MODELS": ` "` + mine + `/" `}, append([]string{mine}, service...)},
		{"blank is unset", map[string]string{"OLLAMA_MODELS": "  "}, append([]string{filepath.Join(home, ".ollama", "models")}, service...)},
		{"the service's store once", map[string]string{"OLLAMA_MODELS": ollamaServiceDir}, []string{ollamaServiceDir}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := OllamaDirs(func(k string) string { return tt.env[k] })
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("OllamaDirs() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestModelDirsResolvedOllama(t *testing.T) {
	home := setHome(t)
	store := filepath.Join(home, ".ollama", "models")
	mkdirs(t, store, ollamaServiceDir)
	c := Default()
	want := []string{store}
	if runtime.GOOS == "linux" {
		want = append(want, ollamaServiceDir)
	}
	if got := c.ModelDirsResolved(); !reflect.DeepEqual(got, want) {
		t.Errorf("ModelDirsResolved() = %v, want %v", got, want)
	}

	// $OLLAMA_MODELS replaces ~/.ollama/models, and is scanned only when it exists.
	moved := filepath.Join(home, "elsewhere")
	t.Setenv("OLLAMA_MODELS", moved)
	if got := c.ModelDirsResolved(); !slices.Equal(got, want[1:]) {
		t.Errorf("OLLAMA_MODELS missing: ModelDirsResolved() = %v, want %v", got, want[1:])
	}
	mkdirs(t, moved)
	if got := c.ModelDirsResolved(); !slices.Equal(got, append([]string{moved}, want[1:]...)) {
		t.Errorf("OLLAMA_MODELS: ModelDirsResolved() = %v", got)
	}

	// The stores are default folders: off with scan_default_dirs, and listed after the Hub cache.
	c.ScanDefaultDirs = false
	if got := c.ModelDirsResolved(); len(got) != 0 {
		t.Errorf("without default dirs: %v", got)
	}
	d := DefaultModelDirs()
	if len(d) < 2 || d[len(d)-len(want)] != moved || !slices.Contains(d[:len(d)-len(want)], HubCacheDir(nil)) {
		t.Errorf("DefaultModelDirs() = %v: the Ollama stores should come last, after %s", d, HubCacheDir(nil))
	}
}

func mkdirs(t *testing.T, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
}
