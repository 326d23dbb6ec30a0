package ollama

import (
	"fmt"
	"sort"
	"strings"
	"time"
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
	f := float64(n)
	whole := func(d float64) bool { return f/d == float64(int64(f/d)) }
	switch {
	case n <= 0:
		return ""
	case f >= 1e9 && whole(1e9):
		return fmt.Sprintf("%.0fB", f/1e9)
	case f >= 1e9:
		return fmt.Sprintf("%.1fB", f/1e9)
	case f >= 1e6 && whole(1e6):
		return fmt.Sprintf("%.0fM", f/1e6)
	case f >= 1e6:
		return fmt.Sprintf("%.2fM", f/1e6)
	case f >= 1e3 && whole(1e3):
		return fmt.Sprintf("%.0fK", f/1e3)
	case f >= 1e3:
		return fmt.Sprintf("%.1fK", f/1e3)
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
		size := m.Memory
		if size < m.VRAM {
			size = m.VRAM
		}
		out.Models = append(out.Models, ProcessModel{Name: m.Name, Model: m.Name, Size: size, Digest: m.Digest, Details: m.details(),
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
