package ollama

import (
	"fmt"
	"strings"
)

// HubName reads a model name as Ollama's users write Hub models: hf.co/ORG/REPO:QUANT (also
// huggingface.co/…, with or without https://), or plain ORG/REPO:QUANT.
func HubName(name string) string {
	n := strings.TrimSpace(name)
	for _, p := range []string{"https://", "http://"} {
		n = strings.TrimPrefix(n, p)
	}
	for _, p := range []string{"hf.co/", "huggingface.co/", "www.huggingface.co/"} {
		if rest, ok := strings.CutPrefix(strings.ToLower(n), p); ok {
			n = n[len(n)-len(rest):]
			break
		}
	}
	if base, ok := strings.CutSuffix(n, ":latest"); ok {
		n = base // Ollama's default tag: the default quant
	}
	return n
}

// AltNames are the other names an Ollama name may resolve by, in order: without the ":latest"
// it was listed with, then as a Hub name.
func AltNames(name string) []string {
	var out []string
	if base, tagged := Unlisted(name); tagged {
		out = append(out, base)
	}
	if h := HubName(name); h != name && (len(out) == 0 || h != out[0]) {
		out = append(out, h)
	}
	return out
}

// NotFoundText is Ollama's message for a model it does not have, which differs by endpoint (as
// recorded from Ollama 0.33: router/testbed/testdata/ollama/errors.json).
func NotFoundText(path, name string) string {
	switch path {
	case "/api/embed", "/api/embeddings", "/api/pull":
		return fmt.Sprintf("model %q not found, try pulling it first", name)
	case "/api/show":
		return fmt.Sprintf("model '%s' not found", ListedName(name))
	}
	return fmt.Sprintf("model '%s' not found", name)
}
