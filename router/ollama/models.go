package ollama

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/llamatray/llamatray/router/engine"
	"github.com/llamatray/llamatray/router/view"
)

// Model is what the router knows of one model, for /api/tags, /api/show and /api/ps.
type Model struct {
	Name          string // as listed: the catalog ID, with ":latest" when it has no tag
	Digest        string // 64 hex digits, stable for the same file
	Size          int64  // bytes of the model's files
	Modified      time.Time
	Family        string // the GGUF architecture
	Parameters    int64
	Quantization  string
	ContextLength int
	EmbeddingLen  int  // embedding length (GGUF's <arch>.embedding_length); 0 = unknown
	Projector     bool // it has a multimodal projector
	ChatTemplate  bool
	Embedding     bool // an embedding model (pooling, no causal head)

	Running   bool
	Memory    int64     // held while running
	VRAM      int64     // of Memory, on GPUs
	ExpiresAt time.Time // when an idle unload is due; zero: not scheduled
	Ctx       int       // the context it runs with
}

// ListedName is how a catalog ID is listed: Ollama's names always carry a tag, "latest" by default.
func ListedName(id string) string {
	if strings.Contains(id[strings.LastIndex(id, "/")+1:], ":") {
		return id
	}
	return id + ":latest"
}

// Unlisted is the name to resolve for one a client sends: without the default tag it was listed with.
func Unlisted(name string) (string, bool) {
	return strings.CutSuffix(name, ":latest")
}

func (m Model) details() Details {
	fam := []string{}
	if m.Family != "" {
		fam = []string{m.Family}
	}
	return Details{Format: "gguf", Family: m.Family, Families: fam, ParameterSize: paramSize(m.Parameters), QuantizationLevel: m.Quantization}
}

// paramSize writes a parameter count as Ollama does: "8.0B", "3.2B", "494.03M", "1B".
func paramSize(n int64) string {
	if n <= 0 {
		return ""
	}
	for _, u := range []struct {
		size float64
		unit string
		prec int
	}{{1e9, "B", 1}, {1e6, "M", 2}, {1e3, "K", 1}} {
		if v := float64(n) / u.size; v >= 1 {
			if v == math.Trunc(v) {
				u.prec = 0
			}
			return fmt.Sprintf("%.*f%s", u.prec, v, u.unit)
		}
	}
	return fmt.Sprintf("%d", n)
}

// Tags is the answer of GET /api/tags, newest first as Ollama lists.
func Tags(models []Model) ListResponse {
	out := ListResponse{Models: make([]ListModel, 0, len(models))}
	for _, m := range models {
		d := m.details()
		d.ContextLength, d.EmbeddingLength = m.ContextLength, m.EmbeddingLen
		out.Models = append(out.Models, ListModel{Name: m.Name, Model: m.Name, ModifiedAt: m.Modified, Size: m.Size, Digest: m.Digest,
			Details: d, Capabilities: m.Capabilities()})
	}
	sort.SliceStable(out.Models, func(i, j int) bool { return out.Models[i].ModifiedAt.After(out.Models[j].ModifiedAt) })
	return out
}

// PS is the answer of GET /api/ps: the running models.
func PS(models []Model) ProcessResponse {
	out := ProcessResponse{Models: []ProcessModel{}}
	for _, m := range models {
		if !m.Running {
			continue
		}
		exp := m.ExpiresAt
		if exp.IsZero() {
			exp = time.Date(2318, 11, 21, 0, 0, 0, 0, time.UTC) // Ollama's "never" for keep_alive -1
		}
		out.Models = append(out.Models, ProcessModel{Name: m.Name, Model: m.Name, Size: max(m.Memory, m.VRAM), Digest: m.Digest, Details: m.details(),
			ExpiresAt: exp, SizeVRAM: m.VRAM, ContextLength: m.Ctx})
	}
	return out
}

// Capabilities are what Ollama's clients check before they use a model.
func (m Model) Capabilities() []string {
	if m.Embedding {
		return []string{"embedding"}
	}
	caps := []string{"completion"}
	if m.ChatTemplate {
		caps = append(caps, "tools")
	}
	if m.Projector {
		caps = append(caps, "vision")
	}
	return caps
}

// Supports says whether the model does what an endpoint asks ("chat", "generate", "embed"), and if
// not, Ollama's words for it, naming the model as the request did (asked).
func (m Model) Supports(what, asked string) error {
	if m.Embedding && (what == "chat" || what == "generate") {
		return bad("%q does not support %s", asked, what)
	}
	return nil
}

// Show is the answer of POST /api/show.
func Show(m Model) ShowResponse {
	info := map[string]any{"general.architecture": m.Family, "general.parameter_count": m.Parameters}
	if m.Family != "" && m.ContextLength > 0 {
		info[m.Family+".context_length"] = m.ContextLength
	}
	if m.Family != "" && m.EmbeddingLen > 0 {
		info[m.Family+".embedding_length"] = m.EmbeddingLen
	}
	return ShowResponse{
		Modelfile:    "# Served by Llamatray from a GGUF file; its chat template is the file's own.\nFROM " + m.Name + "\n",
		Template:     "{{ .Prompt }}",
		Details:      m.details(),
		ModelInfo:    info,
		Capabilities: m.Capabilities(),
		ModifiedAt:   m.Modified,
	}
}

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

// embeddingArchs are GGUF architectures that embed rather than generate.
var embeddingArchs = map[string]bool{"bert": true, "nomic-bert": true, "nomic-bert-moe": true, "jina-bert-v2": true,
	"t5encoder": true, "modern-bert": true, "neo-bert": true}

// FromView is the one view of a model in Ollama's terms.
func FromView(v view.Model) Model {
	m := Model{Name: ListedName(v.ID), Digest: digestOf(v), Ctx: v.CtxSize,
		Running: v.State == engine.StateLoaded || v.State == engine.StateSleeping, Memory: v.MemoryBytes, ExpiresAt: v.UnloadAt}
	for _, b := range v.HeldGPU {
		m.VRAM += b
	}
	if c := v.Meta; c != nil {
		if c.HubName != "" && len(c.Ollama) == 0 {
			m.Name = "hf.co/" + c.HubName // a Hub pull is listed by the name it was pulled by, as Ollama lists it
		}
		m.Size, m.Modified, m.Family, m.Parameters, m.Quantization = c.SizeBytes, c.ModTime, c.Architecture, c.Parameters, c.Quantization
		m.ContextLength, m.EmbeddingLen, m.Projector, m.ChatTemplate = c.ContextLength, c.EmbeddingLen, c.Mmproj != "", c.ChatTemplate
		m.Embedding = c.Pooling || embeddingArchs[c.Architecture]
	}
	return m
}

// digestOf is a model's digest: an Ollama blob's own sha256 when the file is one, else a hash of
// the file's name, size and time, stable while the file does not change.
func digestOf(v view.Model) string {
	if v.Meta == nil {
		return ""
	}
	if hex, ok := strings.CutPrefix(filepath.Base(v.Meta.Path), "sha256-"); ok && len(hex) == 64 {
		return hex
	}
	h := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%d\x00%d", v.Meta.Path, v.Meta.SizeBytes, v.Meta.ModTime.UnixNano())))
	return hex.EncodeToString(h[:])
}

// PeerModel is a peer's model in Ollama's terms: the table knows its ID and state only, so
// size, family and the rest are unknown (zero), and modified_at is when this server started, as
// the OpenAI listing's created.
func PeerModel(name, ref, status string, started time.Time) Model {
	h := sha256.Sum256([]byte("peer\x00" + ref)) // the digest: stable while the peer lists ref
	return Model{Name: name, Digest: hex.EncodeToString(h[:]), Modified: started, Running: status == "loaded"}
}
