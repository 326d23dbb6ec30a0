package ollama

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/llamatray/llamatray/router/engine"
	"github.com/llamatray/llamatray/router/view"
)

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
	if c := v.Meta; c != nil && c.HubName != "" && len(c.Ollama) == 0 {
		m.Name = "hf.co/" + c.HubName // a Hub pull is listed by the name it was pulled by, as Ollama lists it
	}
	if c := v.Meta; c != nil {
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
	return Model{Name: name, Digest: peerDigest(ref), Modified: started, Running: status == "loaded"}
}

// peerDigest is a peer model's digest: a hash of its "peer:NAME/ID", stable while the peer lists it.
func peerDigest(ref string) string {
	h := sha256.Sum256([]byte("peer\x00" + ref))
	return hex.EncodeToString(h[:])
}
