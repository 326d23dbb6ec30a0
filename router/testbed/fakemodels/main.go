// Command fakemodels writes header-only GGUF models for demos and screenshots: each file declares a
// real model's shape and has that model's size, but is sparse and takes almost no disk. It reads
// one model a line from stdin (blank lines and lines starting with # are skipped):
//
//	NAME ARCH BLOCKS EMBEDDING FFN HEADS HEADS_KV VOCAB FILE_TYPE CONTEXT
//
// and writes DIR/NAME.gguf for each:
//
//	go run ./router/testbed/fakemodels DIR <models.txt
//
// FILE_TYPE is general.file_type (15 is Q4_K_M, 7 Q8_0, 17 Q5_K_M). The tensors are declared F16,
// so a file is two bytes per parameter whatever its file type says.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/testbed/ggufwrite"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: fakemodels DIR <models.txt  (NAME ARCH BLOCKS EMBEDDING FFN HEADS HEADS_KV VOCAB FILE_TYPE CONTEXT per line)")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Stdin); err != nil {
		fmt.Fprintln(os.Stderr, "fakemodels:", err)
		os.Exit(1)
	}
}

func run(dir string, in io.Reader) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	sc := bufio.NewScanner(in)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, o, err := parseLine(line)
		if err != nil {
			return fmt.Errorf("line %d: %w", n, err)
		}
		path := filepath.Join(dir, name+".gguf")
		f := ggufwrite.Header(o)
		if err := ggufwrite.WriteFile(path, f); err != nil {
			return fmt.Errorf("line %d: %w", n, err)
		}
		size, _ := f.Size()
		fmt.Printf("%s  %s\n", path, config.HumanSize(size))
	}
	return sc.Err()
}

// parseLine reads "NAME ARCH BLOCKS EMBEDDING FFN HEADS HEADS_KV VOCAB FILE_TYPE CONTEXT".
func parseLine(line string) (string, ggufwrite.HeaderOptions, error) {
	f := strings.Fields(line)
	if len(f) != 10 {
		return "", ggufwrite.HeaderOptions{}, fmt.Errorf("%d fields, want 10: NAME ARCH BLOCKS EMBEDDING FFN HEADS HEADS_KV VOCAB FILE_TYPE CONTEXT", len(f))
	}
	if strings.ContainsAny(f[0], `/\`) {
		return "", ggufwrite.HeaderOptions{}, fmt.Errorf("name %q: a file name, not a path", f[0])
	}
	var nums [8]int
	for i := range nums {
		v, err := strconv.Atoi(f[2+i])
		if err != nil || v <= 0 {
			return "", ggufwrite.HeaderOptions{}, fmt.Errorf("field %d %q: want a positive integer", 3+i, f[2+i])
		}
		nums[i] = v
	}
	return f[0], ggufwrite.HeaderOptions{
		Arch: f[1], Name: f[0],
		Blocks: nums[0], Embedding: nums[1], FFN: nums[2], Heads: nums[3], HeadsKV: nums[4], Vocab: nums[5],
		FileType: uint32(nums[6]), ContextLength: nums[7],
	}, nil
}
