package config

import (
	"strings"
	"testing"
)

// The draft's llama-server flags, in every spelling llama-server 0.7.0's --help gives, are refused
// in args and point at the draft keys; the draft's other flags (its threads, KV cache type) pass.
func TestDraftFlagsReserved(t *testing.T) {
	for flag, key := range map[string]string{
		"-md": "draft", "--model-draft": "draft", "--spec-draft-model": "draft", "--hf-repo-draft": "draft",
		"-ngld": "draft_gpu_layers", "--gpu-layers-draft": "draft_gpu_layers", "--spec-draft-ngl": "draft_gpu_layers",
		"--spec-draft-n-max": "draft_max", "--draft-max": "draft_max",
	} {
		err := checkArgs([]string{flag + "=1"})
		if err == nil || !strings.Contains(err.Error(), "(from "+key+")") {
			t.Errorf("%s: %v", flag, err)
		}
	}
	for _, ok := range []string{"-td", "-ctkd", "--spec-type", "--spec-draft-p-min"} {
		if err := checkArgs([]string{ok, "2"}); err != nil {
			t.Errorf("%s refused: %v", ok, err)
		}
	}
}
