package catalog

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestShardNames(t *testing.T) {
	for _, tc := range []struct {
		name     string
		ok       bool
		n, total int
		second   string
	}{
		{"m-00001-of-00003.gguf", true, 1, 3, "m-00002-of-00003.gguf"},
		{"Big-Model-00003-OF-00004.GGUF", true, 3, 4, "Big-Model-00002-OF-00004.GGUF"},
		{"m.gguf", false, 0, 0, ""},
		{"m-0001-of-00003.gguf", false, 0, 0, ""},
		{"m-00001-of-00003.gguf.part", false, 0, 0, ""},
	} {
		s, ok := ParseShard(tc.name)
		if ok != tc.ok || s.N != tc.n || s.Total != tc.total || (ok && s.Name(2) != tc.second) {
			t.Errorf("%s: %+v %v", tc.name, s, ok)
		}
	}
	got := ShardPaths(filepath.Join("d", "X-00002-of-00002.Gguf"))
	if len(got) != 2 || got[0] != filepath.Join("d", "X-00001-of-00002.Gguf") || got[1] != filepath.Join("d", "X-00002-of-00002.Gguf") {
		t.Errorf("%v", got)
	}
	if got := ShardPaths("/m/one.gguf"); len(got) != 1 || got[0] != "/m/one.gguf" {
		t.Errorf("%v", got)
	}
}

func TestCheckGGUF(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{"good.gguf": "GGUF\x03\x00\x00\x00", "zip.gguf": "PK\x03\x04zip", "old.gguf": "tjggxxxx", "short.gguf": "GG"} {
		os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644)
	}
	if err := CheckGGUF(filepath.Join(dir, "good.gguf")); err != nil {
		t.Error(err)
	}
	for name, want := range map[string]string{"zip.gguf": "not a GGUF model", "old.gguf": "old GGML format", "short.gguf": "too short"} {
		if err := CheckGGUF(filepath.Join(dir, name)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", name, err, want)
		}
	}
	// The system's own words for a missing file ("no such file", "cannot find the file").
	if err := CheckGGUF(filepath.Join(dir, "none.gguf")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("none.gguf: %v, want a file-not-found error", err)
	}
}

func TestParamsLabel(t *testing.T) {
	for n, want := range map[int64]string{0: "", 950: "950", 173_504: "174K", 362_000_000: "362M", 1_540_000_000: "1.5B",
		7_000_000_000: "7B", 7_610_000_000: "7.6B", 70_550_000_000: "71B"} {
		if got := ParamsLabel(n); got != want {
			t.Errorf("ParamsLabel(%d) = %q, want %q", n, got, want)
		}
	}
}
