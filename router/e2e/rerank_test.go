package e2e

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/testbed/ggufwrite"
)

// A reranker (its GGUF's pooling is llama.cpp's rank) is started with --reranking, so /v1/rerank
// answers through Llamatray; started with --embeddings alone, llama-server answers it 501.
func TestRerankerServesRerank(t *testing.T) {
	in := start(t, nil, nil)
	o := ggufwrite.ArchOptions{Arch: "bert", Name: "rr", Embedding: 64, Blocks: 1, Vocab: 1000}
	if err := ggufwrite.WriteArch(filepath.Join(in.dir, "rr.gguf"), o); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if resp, err := http.Get(in.base + "/models?reload=1"); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
	}
	code, body, err := in.post(ctx, "/v1/rerank", `{"model":"rr","query":"a","documents":["b","c"]}`)
	if err != nil || code != http.StatusOK || !strings.Contains(body, `"relevance_score"`) {
		t.Fatalf("rerank: %d %s %v", code, body, err)
	}
	if code, body, err := in.post(ctx, "/v1/embeddings", `{"model":"rr","input":"hello"}`); err != nil || code != http.StatusOK || !strings.Contains(body, `"embedding"`) {
		t.Fatalf("embeddings from a reranker: %d %s %v", code, body, err)
	}
}
