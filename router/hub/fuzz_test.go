package hub

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzTreePath: a repo path checkRepoPath accepts names a file inside the snapshot folder, and
// writing it through the cache's os.Root lands inside; anything else is refused with ErrUnsafe.
func FuzzTreePath(f *testing.F) {
	for _, s := range []string{"model-Q4_K_M.gguf", "sub/dir/x-00001-of-00002.gguf", "../../../../home/x.gguf",
		"a/../../b.gguf", "/etc/passwd", `..\..\x`, "C:x", "a\nb", "a\x00b", "./x", "a//b", "x/", "…/é.gguf", "NUL", "a/./b"} {
		f.Add(s)
	}
	base := f.TempDir()
	snap := filepath.Join(base, "snapshots", strings.Repeat("a", 40))
	if err := os.MkdirAll(snap, 0o755); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, p string) {
		err := checkRepoPath(p)
		if err != nil {
			if !errors.Is(err, ErrUnsafe) {
				t.Fatalf("%q: %v does not match ErrUnsafe", p, err)
			}
			return
		}
		joined := filepath.Join(snap, filepath.FromSlash(p))
		if !strings.HasPrefix(joined, snap+string(filepath.Separator)) {
			t.Fatalf("%q joins to %s, outside %s", p, joined, snap)
		}
		root, err := os.OpenRoot(snap)
		if err != nil {
			t.Fatal(err)
		}
		defer root.Close()
		native := filepath.FromSlash(p)
		if err := root.MkdirAll(filepath.Dir(native), 0o755); err == nil {
			_ = root.WriteFile(native, []byte("x"), 0o644)
		}
		ents, _ := os.ReadDir(filepath.Dir(snap))
		if len(ents) != 1 {
			t.Fatalf("%q: something was written beside the snapshot folder", p)
		}
		first, _, _ := strings.Cut(native, string(filepath.Separator))
		_ = root.RemoveAll(first)
	})
}
