package fakehub

import (
	"fmt"
	"path"
	"path/filepath"

	"github.com/llamatray/llamatray/router/testbed/ggufwrite"
)

// AddModelRepo publishes repo id (ORG/REPO) with one runnable random-weight llama GGUF per
// quant, named <REPO>-<QUANT>.gguf and written under dir. The quant is only a name: the weights
// are F32 (llama-server runs them all the same). The i-th quant has width 64·(i+1), so sizes differ.
func (h *Hub) AddModelRepo(dir, id string, quants ...string) error {
	files := map[string]string{}
	for i, q := range quants {
		name := fmt.Sprintf("%s-%s.gguf", path.Base(id), q)
		p := filepath.Join(dir, name)
		if err := ggufwrite.WriteLlama(p, ggufwrite.LlamaOptions{Width: 64 * (i + 1), Blocks: 2, Seed: int64(i + 1), Name: id + " " + q}); err != nil {
			return err
		}
		files[name] = p
	}
	return h.AddRepo(id, files)
}

// FileName is the repo path AddModelRepo gives a quant.
func FileName(id, quant string) string { return fmt.Sprintf("%s-%s.gguf", path.Base(id), quant) }
