package catalog

// Ollama's model store, read in place.
//
// A folder holding manifests/ and blobs/ is an Ollama store ($OLLAMA_MODELS, ~/.ollama/models),
// wherever a walk meets it. manifests/HOST/NAMESPACE/MODEL/TAG are JSON image manifests (docker's
// schema 2) whose layers name blobs/sha256-HEX (sha256:HEX in older stores) by digest. The model
// layer's blob is the model file, served as it is, never copied or linked; the projector layer's
// blob is its mmproj; the params, template and system layers are kept on the entry (Model.Ollama,
// Model.Defaults) for the API layers to apply. The catalog never writes into a store.
//
// A store may be broken or hostile, so every name is checked before use: each part of a
// manifest's path by Ollama's own rules for names (no "..", no separators), each digest as
// "sha256" and 64 hex digits. Every file is opened through an os.Root on the manifests or the
// blobs folder, so no link leads out of them, and only after it is seen to be a regular file;
// manifests and the small layers are read through a 1 MiB cap. A manifest that cannot be served
// (malformed, a missing or resized blob, a bad digest or name, a LoRA adapter) is a warning that
// names it and says why; its blob's header is then checked like any model file's.

import (
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// OllamaName is one name a model has in an Ollama store: a manifest whose model layer is the
// entry's file, with the settings its other layers give.
type OllamaName struct {
	Name     string // as Ollama shows it: "llama3.2:3b", "user/m:latest", "hf.co/ORG/REPO:Q4_K_M"
	Manifest string // the manifest file
	// Defaults is the params layer: the request options Ollama applies unless a request sets
	// them, by Ollama's names ("temperature", "top_k", "stop", "num_ctx", ...), as JSON decodes
	// them (numbers are float64, lists []any); nil when the manifest has none.
	Defaults map[string]any
	Template string // the template layer, in Ollama's Go template syntax; "" when none
	System   string // the system layer, the default system prompt; "" when none
}

// ollamaRef is an OllamaName as a walk found it.
type ollamaRef struct {
	OllamaName
	projector string // the real path of its projector layer's blob; "" when none
}

// The layers a blob of an Ollama store is (found.blob).
const (
	blobModel     = "model"
	blobProjector = "projector"
)

// The parts Ollama fills into a name that leaves them out: the host and namespace are left out
// of the names it shows; a name without a tag means "latest".
const (
	ollamaDefaultHost      = "registry.ollama.ai"
	ollamaDefaultNamespace = "library"
	ollamaDefaultTag       = "latest"
)

// validOllamaPart reports whether s is a valid part of an Ollama name at depth 0 (host) to 3
// (tag), by Ollama's rules: 1 to 80 bytes (a host up to 350), starting with a letter, digit or
// "_", then letters, digits, "_", "-" and "." (not in a namespace) and ":" (only in a host).
func validOllamaPart(depth int, s string) bool {
	limit := 80
	if depth == 0 {
		limit = 350
	}
	if s == "" || len(s) > limit {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_':
		case i == 0:
			return false
		case c == '-':
		case c == '.' && depth != 1:
		case c == ':' && depth == 0:
		default:
			return false
		}
	}
	return true
}

// ollamaDisplayName is the name Ollama shows for the manifest at HOST/NAMESPACE/MODEL/TAG: the
// default host and namespace are left out, the tag never is.
func ollamaDisplayName(host, namespace, model, tag string) string {
	switch {
	case !strings.EqualFold(host, ollamaDefaultHost):
		return host + "/" + namespace + "/" + model + ":" + tag
	case !strings.EqualFold(namespace, ollamaDefaultNamespace):
		return namespace + "/" + model + ":" + tag
	}
	return model + ":" + tag
}

// ollamaLookupNames are the names a model answers to for its Ollama name: the name, and without
// its tag when that is "latest", as Ollama fills it in.
func ollamaLookupNames(name string) []string {
	i := strings.LastIndexByte(name, ':')
	if i >= 0 && strings.EqualFold(name[i+1:], ollamaDefaultTag) {
		return []string{name, name[:i]}
	}
	return []string{name}
}

// OllamaNamed returns the Ollama name of m that name is: the same in any case, or without its
// ":latest". The API layers look a request's model up with Lookup, then take the settings of
// the name it used from here.
func (m Model) OllamaNamed(name string) (OllamaName, bool) {
	for _, o := range m.Ollama {
		for _, n := range ollamaLookupNames(o.Name) {
			if strings.EqualFold(n, name) {
				return o.clone(), true
			}
		}
	}
	return OllamaName{}, false
}

func (o OllamaName) clone() OllamaName {
	o.Defaults = cloneJSONObject(o.Defaults)
	return o
}

// cloneJSONObject deep-copies a decoded JSON object, so that callers share nothing.
func cloneJSONObject(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = cloneJSON(v)
	}
	return out
}

func cloneJSON(v any) any {
	switch v := v.(type) {
	case map[string]any:
		return cloneJSONObject(v)
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = cloneJSON(x)
		}
		return out
	}
	return v
}

// nameOrder orders names part by part, so that "tiny:latest" comes before "tiny2:v1".
var nameOrder = strings.NewReplacer("/", "\x00", ":", "\x00")

// sortRefs orders a file's Ollama names (part by part: host, namespace, model, tag) and drops
// repeats (one store seen twice).
func sortRefs(refs []ollamaRef) []ollamaRef {
	if len(refs) < 2 {
		return refs
	}
	sort.SliceStable(refs, func(i, j int) bool { return nameOrder.Replace(refs[i].Name) < nameOrder.Replace(refs[j].Name) })
	return slices.CompactFunc(refs, func(a, b ollamaRef) bool { return a.Name == b.Name })
}

// trouble is a problem of f's file: for a blob of an Ollama store, told of its first manifest.
func (f found) trouble(reason string) problem {
	if f.blob == "" || len(f.ollama) == 0 {
		return problem{f.path, reason}
	}
	o := f.ollama[0]
	return problem{o.Manifest, fmt.Sprintf("Ollama model %s: %s blob %s: %s", o.Name, f.blob, filepath.Base(f.path), reason)}
}

// ollamaProjector is the projector entry of the first of e's Ollama names that has one.
func ollamaProjector(e *entry, byReal map[string]*entry) *entry {
	for _, r := range e.first().ollama {
		if p := byReal[r.projector]; r.projector != "" && p != nil {
			return p
		}
	}
	return nil
}
