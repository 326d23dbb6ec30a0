// Package fitbed holds what the memory-fit checks share: models of eight architectures shaped like
// real ones (their real vocabularies and tensor layouts, written by ggufwrite), the request that
// makes llama-server touch its buffers, the child's peak resident set, and the buffer sizes
// llama.cpp logs. The end-to-end tests use thin models; `make bench-fit` uses bigger ones.
package fitbed

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/llamatray/llamatray/router/testbed/ggufwrite"
)

// Kinds of model, by the request that exercises them.
const (
	Chat  = "chat"  // a 500-token prompt and 4 generated tokens
	Embed = "embed" // the embedding of 500 tokens
	Rank  = "rank"  // one query and a 500-token document
)

// Spec is one model of the test bed.
type Spec struct {
	Name string
	Kind string
	Opts ggufwrite.ArchOptions
}

// Specs are the eight architectures with their real vocabularies. scale 1 makes thin models of a few
// tens of MB beyond their embeddings (tests); scale 4 makes models several times wider (the bench).
func Specs(scale int) []Spec {
	w := 256 * scale
	a := func(arch string, vocab int, tied bool, o ggufwrite.ArchOptions) ggufwrite.ArchOptions {
		o.Arch, o.Vocab, o.Tied = arch, vocab, tied
		if o.Embedding == 0 {
			o.Embedding = w
		}
		if o.Heads == 0 {
			o.Heads, o.HeadsKV = 8, 4
		}
		if o.Blocks == 0 {
			o.Blocks = 4
		}
		return o
	}
	return []Spec{
		{"llama3", Chat, a("llama", 128256, true, ggufwrite.ArchOptions{})},
		{"qwen3", Chat, a("qwen3", 151936, true, ggufwrite.ArchOptions{HeadDim: 128})},
		{"qwen3moe", Chat, a("qwen3moe", 151936, false, ggufwrite.ArchOptions{HeadDim: 128, FFN: w, Experts: 16, ExpertsUsed: 4})},
		{"gemma3", Chat, a("gemma3", 262144, true, ggufwrite.ArchOptions{Blocks: 6, HeadDim: 256, Heads: 4, HeadsKV: 1, SlidingWindow: 512})},
		{"phi3", Chat, a("phi3", 32064, false, ggufwrite.ArchOptions{Heads: 8, HeadsKV: 8})},
		{"lfm2", Chat, a("lfm2", 65536, true, ggufwrite.ArchOptions{Blocks: 6})},
		{"nomic-bert", Embed, a("nomic-bert", 30522, true, ggufwrite.ArchOptions{Heads: 8, HeadsKV: 8, ContextLength: 2048})},
		{"bert-rerank", Rank, a("bert", 30522, true, ggufwrite.ArchOptions{Heads: 8, HeadsKV: 8, ContextLength: 8192})},
	}
}

// Write writes s into dir as NAME.gguf with weights of type typ and returns its path.
func Write(dir string, s Spec, typ uint32) (string, error) {
	o := s.Opts
	o.Type, o.Name = typ, s.Name
	path := filepath.Join(dir, s.Name+".gguf")
	if err := ggufwrite.WriteArch(path, o); err != nil {
		return "", err
	}
	return path, nil
}

// Exercise sends the request of kind to the server at base (llama-server or Llamatray) for model:
// a prompt of 500 tokens, so that the batch buffers are used as a first real request uses them.
func Exercise(ctx context.Context, base, model, kind string) error {
	ids := make([]int, 500)
	for i := range ids {
		ids[i] = 300 + i
	}
	var path string
	body := map[string]any{"model": model}
	switch kind {
	case Chat:
		path = "/v1/completions"
		body["prompt"], body["max_tokens"] = ids, 4
	case Embed:
		path = "/v1/embeddings"
		body["input"] = ids
	case Rank:
		// Llamatray starts a pooling model with --embeddings (not --reranking): its score comes
		// back as the embedding of the query and document pair.
		path = "/v1/embeddings"
		body["input"] = ids
	default:
		return fmt.Errorf("unknown kind %q", kind)
	}
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, "POST", base+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", kind, model, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: %s: %s", kind, model, resp.Status, out)
	}
	return nil
}

// PeakRSS is the peak resident set of process pid (VmHWM), in bytes.
func PeakRSS(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("VmHWM %q: %w", v, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("no VmHWM for pid %d", pid)
}

// Logged is what llama.cpp logs of one load's host buffers, in bytes.
type Logged struct {
	Model, Output, KV, Compute int64
}

var bufLine = regexp.MustCompile(`\s(model|KV|RS|output|compute) buffer size =\s*([0-9.]+) MiB`)

// ParseLog reads the buffer sizes of the last load in a llama-server log (the parameter fitting's dry
// run before it logs the same lines with empty buffers).
func ParseLog(log string) Logged {
	var l Logged
	other := false // a buffer other than the model's since the last model line
	for line := range strings.SplitSeq(log, "\n") {
		m := bufLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		mib, _ := strconv.ParseFloat(m[2], 64)
		n := int64(mib * (1 << 20))
		switch m[1] {
		case "model":
			if other { // a new load
				l, other = Logged{}, false
			}
			l.Model += n
			continue
		case "KV", "RS":
			l.KV += n
		case "output":
			l.Output += n
		case "compute":
			l.Compute += n
		}
		other = true
	}
	return l
}
