package app

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeGGUF(t *testing.T, path string, size int) []byte {
	t.Helper()
	b := make([]byte, size)
	copy(b, "GGUF")
	for i := 4; i < size; i++ {
		b[i] = byte(i * 7)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return b
}

func TestImportModelCopyWithProgress(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "downloads", "big.gguf")
	content := writeGGUF(t, src, 10<<20+123)
	dst := filepath.Join(dir, "models")

	var calls []int64
	got, err := ImportModel(context.Background(), src, dst, ImportCopy, func(done, total int64) {
		if total != int64(len(content)) {
			t.Errorf("total = %d, want %d", total, len(content))
		}
		calls = append(calls, done)
	})
	if err != nil {
		t.Fatal(err)
	}
	if got != filepath.Join(dst, "big.gguf") {
		t.Errorf("destination = %s", got)
	}
	b, err := os.ReadFile(got)
	if err != nil || !bytes.Equal(b, content) {
		t.Fatalf("copy differs from the source (%v)", err)
	}
	if len(calls) < 3 || calls[len(calls)-1] != int64(len(content)) {
		t.Errorf("progress calls = %v, want several ending at %d", calls, len(content))
	}
	for i := 1; i < len(calls); i++ {
		if calls[i] < calls[i-1] {
			t.Errorf("progress went backwards: %v", calls)
		}
	}
	if _, err := os.Stat(got + ".partial"); !os.IsNotExist(err) {
		t.Errorf("temporary file left: %v", err)
	}
	// The source is untouched and a second import of the same name is refused.
	if _, err := os.Stat(src); err != nil {
		t.Error(err)
	}
	if _, err := ImportModel(context.Background(), src, dst, ImportCopy, nil); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("second import: %v, want already exists", err)
	}
}

func TestImportModelLink(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "a.gguf")
	writeGGUF(t, src, 1000)
	dst := filepath.Join(dir, "models")
	got, err := ImportModel(context.Background(), src, dst, ImportLink, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := os.Stat(src)
	b, err := os.Stat(got)
	if err != nil || !os.SameFile(a, b) {
		t.Fatalf("linked file is not the source (%v)", err)
	}
	// Importing the same file again is a no-op, not an error.
	if _, err := ImportModel(context.Background(), src, dst, ImportLink, nil); err != nil {
		t.Errorf("re-import of the same file: %v", err)
	}
}

func TestImportModelSplit(t *testing.T) {
	dir := t.TempDir()
	for i := 1; i <= 3; i++ {
		writeGGUF(t, filepath.Join(dir, "in", "m-0000"+string(rune('0'+i))+"-of-00003.gguf"), 100*i)
	}
	dst := filepath.Join(dir, "models")
	got, err := ImportModel(context.Background(), filepath.Join(dir, "in", "m-00001-of-00003.gguf"), dst, ImportCopy, nil)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(got) != "m-00001-of-00003.gguf" {
		t.Errorf("destination = %s", got)
	}
	entries, _ := os.ReadDir(dst)
	if len(entries) != 3 {
		t.Errorf("imported %d files, want all 3 parts", len(entries))
	}
	if got := modelFilesToDelete(got); len(got) != 3 {
		t.Errorf("files to delete = %v, want 3 parts", got)
	}

	os.Remove(filepath.Join(dir, "in", "m-00002-of-00003.gguf"))
	_, err = ImportModel(context.Background(), filepath.Join(dir, "in", "m-00001-of-00003.gguf"), filepath.Join(dir, "other"), ImportCopy, nil)
	if err == nil || !strings.Contains(err.Error(), "part 2 of 3 is missing") {
		t.Errorf("import with a missing part: %v", err)
	}
}

func TestImportModelRefusesNonGGUF(t *testing.T) {
	dir := t.TempDir()
	notes := filepath.Join(dir, "notes.txt")
	os.WriteFile(notes, []byte("hello"), 0o644)
	if _, err := ImportModel(context.Background(), notes, filepath.Join(dir, "m"), ImportCopy, nil); err == nil || !strings.Contains(err.Error(), "not a .gguf") {
		t.Errorf("text file: %v", err)
	}
	fake := filepath.Join(dir, "fake.gguf")
	os.WriteFile(fake, []byte("PK\x03\x04zip"), 0o644)
	if _, err := ImportModel(context.Background(), fake, filepath.Join(dir, "m"), ImportCopy, nil); err == nil || !strings.Contains(err.Error(), "not a GGUF model") {
		t.Errorf("zip named .gguf: %v", err)
	}
}

func TestImportModelCancelledCopyLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "big.gguf")
	writeGGUF(t, src, 12<<20)
	dst := filepath.Join(dir, "models")
	ctx, cancel := context.WithCancel(context.Background())
	_, err := ImportModel(ctx, src, dst, ImportCopy, func(done, total int64) {
		if done > 0 && done < total {
			cancel() // cancel after the first chunk
		}
	})
	if err == nil {
		t.Fatal("cancelled copy succeeded")
	}
	entries, _ := os.ReadDir(dst)
	if len(entries) != 0 {
		t.Errorf("left behind: %v", entries)
	}
}
