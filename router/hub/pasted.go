package hub

import (
	"fmt"
	"net/url"
	"path"
	"strings"

	"github.com/llamatray/llamatray/router/catalog"
)

// hubHosts are the Hub's host names as users paste them.
var hubHosts = []string{"hf.co", "huggingface.co", "www.huggingface.co"}

// ParsePasted reads a model name as users paste it: ORG/REPO or ORG/REPO:QUANT; the same after
// hf.co/ (Ollama's spelling) or huggingface.co/, with or without https://; or a Hub page or file
// URL — …/ORG/REPO/tree/REV, …/blob/REV/FILE, …/resolve/REV/FILE — where a GGUF file names its
// quant (Q4_K_M from model-Q4_K_M.gguf, the first shard of a split file too). A query string or
// fragment is ignored. The result is checked as ParseRef checks it.
func ParsePasted(s string) (Ref, error) {
	in := strings.TrimSpace(s)
	rest, ok := trimHost(in)
	if !ok {
		return ParseRef(in)
	}
	if i := strings.IndexAny(rest, "?#"); i >= 0 {
		rest = rest[:i]
	}
	parts := strings.Split(strings.Trim(rest, "/"), "/")
	if len(parts) < 2 {
		return Ref{}, fmt.Errorf("%q names no model: want a link like https://huggingface.co/ORG/REPO or hf.co/ORG/REPO:QUANT", s)
	}
	for i, p := range parts {
		if u, err := url.PathUnescape(p); err == nil {
			parts[i] = u
		}
	}
	repo := parts[0] + "/" + parts[1]
	switch {
	case len(parts) == 2: // ORG/REPO or ORG/REPO:QUANT
		return ParseRef(repo)
	case len(parts) >= 3 && parts[2] == "tree" || len(parts) == 3 && parts[2] == "discussions":
		return ParseRef(repo)
	case len(parts) >= 5 && (parts[2] == "blob" || parts[2] == "resolve"):
		file := path.Base(strings.Join(parts[4:], "/"))
		if !strings.HasSuffix(strings.ToLower(file), ".gguf") || catalog.IsProjector(file) {
			return Ref{}, fmt.Errorf("%q is not a GGUF model file; paste the repo's link (https://huggingface.co/%s) and pick a quant", s, repo)
		}
		q := catalog.QuantOf(file)
		if q == "" {
			return Ref{}, fmt.Errorf("cannot tell the quant of %s from its name; use %s:QUANT", file, repo)
		}
		return ParseRef(repo + ":" + q)
	}
	return Ref{}, fmt.Errorf("%q is not a link to a model on the Hugging Face Hub: want https://huggingface.co/ORG/REPO, or ORG/REPO:QUANT", s)
}

// trimHost strips a scheme and one of the Hub's hosts; false when s names no Hub host.
func trimHost(s string) (string, bool) {
	low := strings.ToLower(s)
	for _, p := range []string{"https://", "http://"} {
		if strings.HasPrefix(low, p) {
			s, low = s[len(p):], low[len(p):]
			break
		}
	}
	for _, h := range hubHosts {
		if strings.HasPrefix(low, h+"/") {
			return s[len(h)+1:], true
		}
	}
	return s, false
}
