package hub

import (
	"strings"
	"testing"
)

func TestParsePasted(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{"ggml-org/gemma-3-1b-it-GGUF", "ggml-org/gemma-3-1b-it-GGUF", ""},
		{"  ggml-org/gemma-3-1b-it-GGUF:q4_k_m ", "ggml-org/gemma-3-1b-it-GGUF:Q4_K_M", ""},
		{"hf.co/bartowski/Qwen2.5-7B-Instruct-GGUF:Q8_0", "bartowski/Qwen2.5-7B-Instruct-GGUF:Q8_0", ""},
		{"HF.CO/bartowski/Qwen2.5-7B-Instruct-GGUF", "bartowski/Qwen2.5-7B-Instruct-GGUF", ""},
		{"https://huggingface.co/ggml-org/gemma-3-1b-it-GGUF", "ggml-org/gemma-3-1b-it-GGUF", ""},
		{"https://huggingface.co/ggml-org/gemma-3-1b-it-GGUF/", "ggml-org/gemma-3-1b-it-GGUF", ""},
		{"https://huggingface.co/ggml-org/gemma-3-1b-it-GGUF?library=llama.cpp", "ggml-org/gemma-3-1b-it-GGUF", ""},
		{"huggingface.co/ggml-org/gemma-3-1b-it-GGUF/tree/main", "ggml-org/gemma-3-1b-it-GGUF", ""},
		{"https://www.huggingface.co/ggml-org/gemma-3-1b-it-GGUF/tree/main/sub", "ggml-org/gemma-3-1b-it-GGUF", ""},
		{"https://huggingface.co/ggml-org/gemma-3-1b-it-GGUF/blob/main/gemma-3-1b-it-Q4_K_M.gguf", "ggml-org/gemma-3-1b-it-GGUF:Q4_K_M", ""},
		{"https://huggingface.co/unsloth/Big-GGUF/resolve/main/Q8_0/Big-Q8_0-00001-of-00003.gguf?download=true", "unsloth/Big-GGUF:Q8_0", ""},
		{"https://huggingface.co/ggml-org/gemma-3-1b-it-GGUF/blob/main/mmproj-model-f16.gguf", "", "not a GGUF model file"},
		{"https://huggingface.co/ggml-org/gemma-3-1b-it-GGUF/blob/main/README.md", "", "not a GGUF model file"},
		{"https://huggingface.co/ggml-org", "", "names no model"},
		{"https://huggingface.co/ggml-org/gemma/settings", "", "not a link to a model"},
		{"https://example.com/a/b", "", "not a Hugging Face model name"},
		{"https://huggingface.co/../../etc/passwd", "", "not a link to a model"},
		{"https://huggingface.co/a%2Fb/c", "", "not a Hugging Face model name"},
		{"gemma", "", "not a Hugging Face model name"},
	} {
		got, err := ParsePasted(tc.in)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: %v, %v; want an error saying %q", tc.in, got, err, tc.err)
		case tc.err == "" && (err != nil || got.String() != tc.want):
			t.Errorf("%q: %q, %v; want %q", tc.in, got.String(), err, tc.want)
		}
	}
}
