package engine

import (
	"testing"

	"github.com/llamatray/llamatray/router/catalog"
)

// A learned footprint belongs to the model run with its draft: the draft's file and flags are
// arguments that bear on memory, so changing or removing the draft keys another footprint.
func TestFootprintKeyedByDraft(t *testing.T) {
	cm := catalog.Model{Path: "/m/big.gguf", SizeBytes: 1 << 30}
	base := []string{"-m", cm.Path, "--alias", "big", "-c", "4096"}
	with := func(extra ...string) string {
		return footprintKey(cm, append(append([]string(nil), base...), extra...))
	}
	none := with()
	small := with("--model-draft", "/m/small.gguf", "--spec-type", "draft-simple")
	tiny := with("--model-draft", "/m/tiny.gguf", "--spec-type", "draft-simple")
	offload := with("--model-draft", "/m/small.gguf", "--spec-type", "draft-simple", "-ngld", "all")
	seen := map[string]string{}
	for name, k := range map[string]string{"none": none, "small": small, "tiny": tiny, "small -ngld all": offload} {
		if o, dup := seen[k]; dup {
			t.Errorf("%s and %s share a footprint key", name, o)
		}
		seen[k] = name
	}
	if with("--model-draft", "/m/small.gguf", "--spec-type", "draft-simple", "--temp", "0.2") != small {
		t.Error("a sampling flag changed the key of a model with a draft")
	}
}
