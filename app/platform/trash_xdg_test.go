//go:build !windows && !darwin

package platform

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/adrg/xdg"
)

func TestMoveToTrashUsesXDGDataHome(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_DATA_HOME", filepath.Join(dir, "data"))
	xdg.Reload()
	t.Cleanup(xdg.Reload)

	src := filepath.Join(dir, "model.gguf")
	if err := os.WriteFile(src, []byte("GGUF"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := MoveToTrash(src); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "data", "Trash", "files", "model.gguf")); err != nil {
		t.Errorf("not in the trash: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "data", "Trash", "info", "model.gguf.trashinfo")); err != nil {
		t.Errorf("no trash record: %v", err)
	}
	if _, err := os.Stat(src); !os.IsNotExist(err) {
		t.Errorf("still in place: %v", err)
	}
}

func TestMountRoot(t *testing.T) {
	dir := t.TempDir()
	root, err := mountRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(root, dir)
	if err != nil || rel == ".." || filepath.IsAbs(rel) || (len(rel) >= 3 && rel[:3] == "../") {
		t.Errorf("mount root %s does not contain %s", root, dir)
	}
}
