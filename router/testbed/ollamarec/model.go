package main

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"

	"github.com/llamatray/llamatray/router/testbed/ggufwrite"
)

// writeModels writes the two recorded models into dir: tiny.gguf (a completion model) and
// tiny-embed.gguf (the same with llama.pooling_type = 1, mean, which makes Ollama start its
// runner with --embedding). Both are mkgguf's `-width 64 -blocks 2 -seed 1` llama, except that
// output.weight is zero on the rows of every token that is not a normal one (bytes, <unk>, <s>;
// </s> is kept): a random model picks byte tokens most of the time, and llama-server fails a
// completion whose text is not valid UTF-8, so without this no generation would finish. The bytes
// are the same on every run.
func writeModels(dir string) error {
	for _, m := range []struct {
		name  string
		embed bool
	}{{"tiny", false}, {"tiny-embed", true}} {
		f := ggufwrite.Llama(ggufwrite.LlamaOptions{Width: 64, Blocks: 2, Seed: 1, Name: m.name})
		if err := onlyNormalTokens(f); err != nil {
			return err
		}
		if m.embed {
			f.KVs = append(f.KVs, ggufwrite.KV{Key: "llama.pooling_type", Value: uint32(1)})
		}
		path := filepath.Join(dir, m.name+".gguf")
		if err := ggufwrite.WriteFile(path, f); err != nil {
			return err
		}
		fmt.Println(path)
	}
	return nil
}

// onlyNormalTokens zeroes the output.weight rows of the tokens whose type is not normal (1),
// the end-of-sequence token aside.
func onlyNormalTokens(f *ggufwrite.File) error {
	var types []int32
	eos := -1
	for _, kv := range f.KVs {
		switch kv.Key {
		case "tokenizer.ggml.token_type":
			types, _ = kv.Value.([]int32)
		case "tokenizer.ggml.eos_token_id":
			if v, ok := kv.Value.(uint32); ok {
				eos = int(v)
			}
		}
	}
	if types == nil {
		return fmt.Errorf("no tokenizer.ggml.token_type")
	}
	for i := range f.Tensors {
		t := &f.Tensors[i]
		if t.Name != "output.weight" {
			continue
		}
		fill, row := t.Fill, int(t.Shape[0])*4
		if fill == nil || int(t.Shape[1]) != len(types) {
			return fmt.Errorf("unexpected output.weight")
		}
		t.Fill = func(w io.Writer) error {
			var buf bytes.Buffer
			if err := fill(&buf); err != nil {
				return err
			}
			b := buf.Bytes()
			for tok, typ := range types {
				if typ != 1 && tok != eos {
					clear(b[tok*row : (tok+1)*row])
				}
			}
			_, err := w.Write(b)
			return err
		}
		return nil
	}
	return fmt.Errorf("no output.weight")
}
