package releases

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llamatray/llamatray/router/testbed/ghreleases"
)

// chmodInside changes nothing outside its folder, even through a link.
func TestChmodInside(t *testing.T) {
	needSymlinks(t)
	dir, out := t.TempDir(), filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(out, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(out, filepath.Join(dir, "llama-server")); err != nil {
		t.Fatal(err)
	}
	if err := chmodInside(dir, "llama-server", 0o755); err == nil {
		t.Error("chmod through a link leading outside succeeded")
	}
	if fi, _ := os.Stat(out); fi.Mode().Perm() != 0o644 {
		t.Errorf("the file outside is %v", fi.Mode())
	}
}

// A link may come before what it points to, and one that still dangles once the archive is unpacked
// is kept when where it would lead is inside; a link loop is refused.
func TestUnpackLinks(t *testing.T) {
	needSymlinks(t)
	unpacked := func(entries ...ghreleases.Entry) (string, error) {
		dir := t.TempDir()
		file := filepath.Join(dir, "a.tar.gz")
		if err := os.WriteFile(file, pack(t, ".tar.gz", entries), 0o644); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, "out")
		os.Mkdir(out, 0o755)
		return out, unpackWithin(file, "a.tar.gz", out, 1<<20)
	}
	link := func(name, to string) ghreleases.Entry {
		return ghreleases.Entry{Name: name, Mode: os.ModeSymlink | 0o777, Data: []byte(to)}
	}
	out, err := unpacked(link("lib/libggml.so", "libggml.so.0"), link("lib/libggml.so.0", "libggml.so.0.1"),
		ghreleases.Entry{Name: "lib/libggml.so.0.1", Mode: 0o644, Data: []byte("lib")},
		link("plugins", "lib"), link("dangling", "lib/missing/x"), link("dangling2", "missing/.."))
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(out, "plugins", "libggml.so")); err != nil || string(b) != "lib" {
		t.Errorf("through the links: %q, %v", b, err)
	}
	if _, err := os.Lstat(filepath.Join(out, "dangling")); err != nil {
		t.Errorf("the dangling link inside was not kept: %v", err)
	}
	if _, err := unpacked(link("a", "b"), link("b", "a")); !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), "too many levels") {
		t.Errorf("a link loop: %v", err)
	}
	if _, err := unpacked(link("up", "."), link("x", "up/up/up/..")); !errors.Is(err, ErrUnsafe) {
		t.Errorf("a link through itself out: %v", err)
	}
	for _, to := range []string{"/etc/passwd", "../..", "../lib/../../x", `..\..\x`, "C:/x", ""} {
		if _, err := unpacked(link("lib/x", to)); !errors.Is(err, ErrUnsafe) {
			t.Errorf("a link to %q: %v", to, err)
		}
	}
	// A file or link already at an entry's name is replaced, never written through.
	out, err = unpacked(link("up", "."), ghreleases.Entry{Name: "f", Mode: 0o644, Data: []byte("one")},
		ghreleases.Entry{Name: "g", HardLink: "f"}, ghreleases.Entry{Name: "g", Mode: 0o644, Data: []byte("two")},
		link("up", "f"), ghreleases.Entry{Name: "up", Mode: 0o644, Data: []byte("three")})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"f": "one", "g": "two", "up": "three"} {
		if b, _ := os.ReadFile(filepath.Join(out, name)); string(b) != want {
			t.Errorf("%s = %q, want %q", name, b, want)
		}
	}
	for _, e := range [][]ghreleases.Entry{
		{{Name: "g", HardLink: "missing"}},
		{link("l", "f"), {Name: "f", Mode: 0o644}, {Name: "g", HardLink: "l"}},
		{{Name: "d/", Mode: os.ModeDir | 0o755}, {Name: "g", HardLink: "d"}},
		{{Name: "g", HardLink: "../x"}},
		{{Name: "g", HardLink: "g"}},
	} {
		if _, err := unpacked(e...); !errors.Is(err, ErrUnsafe) {
			t.Errorf("hard link %+v: %v", e, err)
		}
	}
}
