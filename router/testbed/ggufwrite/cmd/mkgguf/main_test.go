package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	parser "github.com/gpustack/gguf-parser-go"
)

func TestRunRunnable(t *testing.T) {
	out := filepath.Join(t.TempDir(), "m.gguf")
	var stdout, stderr bytes.Buffer
	if err := run([]string{"-o", out, "-width", "128", "-blocks", "3", "-ctx", "1024", "-name", "cli"}, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v (%s)", err, stderr.String())
	}
	st, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("%s %d\n", out, st.Size()); stdout.String() != want {
		t.Errorf("stdout %q, want %q", stdout.String(), want)
	}
	gf, err := parser.ParseGGUFFile(out)
	if err != nil {
		t.Fatal(err)
	}
	ar, md := gf.Architecture(), gf.Metadata()
	if ar.BlockCount != 3 || ar.EmbeddingLength != 128 || ar.MaximumContextLength != 1024 || md.Name != "cli" ||
		md.FileType != parser.GGUFFileTypeMostlyF32 {
		t.Errorf("architecture %+v, metadata %+v", ar, md)
	}
}

func TestRunHeaderOnly(t *testing.T) {
	out := filepath.Join(t.TempDir(), "h.gguf")
	var stdout, stderr bytes.Buffer
	args := []string{"-o", out, "-header-only", "-width", "2048", "-blocks", "8", "-file-type", "15"}
	if err := run(args, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v (%s)", err, stderr.String())
	}
	gf, err := parser.ParseGGUFFile(out)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	// 8 blocks of 2048 wide with 8192 FFN and a 32000 vocabulary in F16: about 1.35 GB.
	if st.Size() < 1e9 || int64(gf.Size) != st.Size() || gf.Metadata().FileType != parser.GGUFFileTypeMostlyQ4_K_M ||
		gf.Architecture().BlockCount != 8 {
		t.Errorf("size %d (parser %d), metadata %+v", st.Size(), int64(gf.Size), gf.Metadata())
	}
}

func TestRunErrors(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		args []string
		want string
	}{
		{[]string{}, "-o is required"},
		{[]string{"-o", filepath.Join(dir, "x.gguf"), "extra"}, "unexpected arguments"},
		{[]string{"-o", filepath.Join(dir, "x.gguf"), "-width", "30"}, "not a multiple of heads"},
		{[]string{"-o", filepath.Join(dir, "missing", "x.gguf")}, "no such file or directory"},
		{[]string{"-width", "x"}, "invalid value"},
	}
	for _, c := range cases {
		var stdout, stderr bytes.Buffer
		err := run(c.args, &stdout, &stderr)
		if err == nil || !strings.Contains(err.Error()+stderr.String(), c.want) {
			t.Errorf("run(%q) = %v (stderr %q), want %q", c.args, err, stderr.String(), c.want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("failed runs left files: %v", entries)
	}
}
