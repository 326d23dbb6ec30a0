// Command mkgguf writes a GGUF test model: a runnable random-weight llama
// model, or with -header-only a metadata-complete sparse file of the declared
// model's full size that takes almost no disk.
//
//	go run ./router/testbed/ggufwrite/cmd/mkgguf -o out.gguf -width 256 -blocks 2 [-header-only] [-ctx N] [-name X]
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/llamatray/llamatray/router/testbed/ggufwrite"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "mkgguf:", err)
		}
		os.Exit(2)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("mkgguf", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("o", "", "output path (required)")
	width := fs.Int("width", 64, "embedding width (n_embd)")
	blocks := fs.Int("blocks", 2, "number of blocks (n_layer)")
	ffn := fs.Int("ffn", 0, "feed-forward width (default 4*width)")
	heads := fs.Int("heads", 4, "attention heads")
	headsKV := fs.Int("heads-kv", 0, "key/value heads (default -heads)")
	ctx := fs.Int("ctx", 0, "training context length (default 2048, 4096 with -header-only)")
	name := fs.String("name", "", "general.name")
	seed := fs.Int64("seed", 0, "seed of the random weights")
	headerOnly := fs.Bool("header-only", false, "write metadata and declared tensors only, as a sparse file")
	vocab := fs.Int("vocab", 0, "vocabulary size with -header-only (default 32000)")
	fileType := fs.Uint("file-type", 0, "general.file_type with -header-only (e.g. 15 = Q4_K_M)")
	arch := fs.String("arch", "", "write a sparse model of this architecture with its real tensor layout (llama, qwen3, qwen3moe, gemma3, phi3, lfm2, nomic-bert, bert); uses -width, -blocks, -ffn, -heads, -heads-kv, -vocab, -ctx")
	tied := fs.Bool("tied", false, "with -arch: no output.weight (the logits reuse token_embd)")
	wtype := fs.String("type", "f16", "with -arch: weight type, f16, q8_0 or f32")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" {
		fs.Usage()
		return errors.New("-o is required")
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if *ffn == 0 {
		*ffn = 4 * *width
	}
	var f *ggufwrite.File
	types := map[string]uint32{"f16": ggufwrite.GGMLTypeF16, "q8_0": ggufwrite.GGMLTypeQ8_0, "f32": ggufwrite.GGMLTypeF32}
	if *arch != "" {
		t, ok := types[*wtype]
		if !ok {
			return fmt.Errorf("-type %q: want f16, q8_0 or f32", *wtype)
		}
		f = ggufwrite.Arch(ggufwrite.ArchOptions{
			Arch: *arch, Name: *name, Embedding: *width, Blocks: *blocks, FFN: *ffn, Heads: *heads, HeadsKV: *headsKV,
			Vocab: *vocab, ContextLength: *ctx, Tied: *tied, Type: t,
		})
	} else if *headerOnly {
		f = ggufwrite.Header(ggufwrite.HeaderOptions{
			Name: *name, Blocks: *blocks, Embedding: *width, FFN: *ffn, Heads: *heads, HeadsKV: *headsKV,
			Vocab: *vocab, ContextLength: *ctx, FileType: uint32(*fileType),
		})
	} else {
		f = ggufwrite.Llama(ggufwrite.LlamaOptions{
			Width: *width, Blocks: *blocks, FFN: *ffn, Heads: *heads, HeadsKV: *headsKV,
			ContextLength: *ctx, Seed: *seed, Name: *name,
		})
	}
	size, err := f.Size()
	if err != nil {
		return err
	}
	if err := ggufwrite.WriteFile(*out, f); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s %d\n", *out, size)
	return nil
}
