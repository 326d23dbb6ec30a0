package platform

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestTrashInto(t *testing.T) {
	dir := t.TempDir()
	trash := filepath.Join(dir, "Trash")
	src := filepath.Join(dir, "my models", "qwen 7b.gguf")
	if err := os.MkdirAll(filepath.Dir(src), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func() {
		if err := os.WriteFile(src, []byte("GGUF model bytes"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	at := time.Date(2025, 3, 4, 5, 6, 7, 0, time.Local)

	write()
	got, err := TrashInto(trash, src, at)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(trash, "files", "qwen 7b.gguf"); got != want {
		t.Errorf("trashed to %s, want %s", got, want)
	}
	if _, err := os.Stat(src); !os.IsNotExist(err) {
		t.Errorf("source still there: %v", err)
	}
	if b, err := os.ReadFile(got); err != nil || string(b) != "GGUF model bytes" {
		t.Errorf("trashed content = %q, %v", b, err)
	}
	info, err := os.ReadFile(filepath.Join(trash, "info", "qwen 7b.gguf.trashinfo"))
	if err != nil {
		t.Fatal(err)
	}
	wantInfo := "[Trash Info]\nPath=" + filepath.ToSlash(strings.ReplaceAll(src, " ", "%20")) + "\nDeletionDate=2025-03-04T05:06:07\n"
	if string(info) != wantInfo {
		t.Errorf("trashinfo:\n%s\nwant:\n%s", info, wantInfo)
	}

	// The same name again gets a numbered name and its own record.
	write()
	got2, err := TrashInto(trash, src, at)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(got2) != "qwen 7b 2.gguf" {
		t.Errorf("second file trashed as %s, want \"qwen 7b 2.gguf\"", filepath.Base(got2))
	}
	if _, err := os.Stat(filepath.Join(trash, "info", "qwen 7b 2.gguf.trashinfo")); err != nil {
		t.Errorf("no record for the second file: %v", err)
	}
}

func TestTrashIntoMissingFileLeavesNoRecord(t *testing.T) {
	dir := t.TempDir()
	trash := filepath.Join(dir, "Trash")
	if _, err := TrashInto(trash, filepath.Join(dir, "gone.gguf"), time.Now()); err == nil {
		t.Fatal("trashing a missing file succeeded")
	}
	entries, _ := os.ReadDir(filepath.Join(trash, "info"))
	if len(entries) != 0 {
		t.Errorf("records left behind: %v", entries)
	}
}

func TestTrashInfoPath(t *testing.T) {
	if got := trashInfoPath("/home/ann/models/a b%c#é.gguf"); got != "/home/ann/models/a%20b%25c%23%C3%A9.gguf" {
		t.Errorf("encoded path = %s", got)
	}
}
