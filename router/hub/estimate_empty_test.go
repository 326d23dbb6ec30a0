package hub

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/llamatray/llamatray/router/catalog"
)

// A server that answers a header's range request with 206 and no bytes ends the remote estimate
// with an error at once; it is not asked for the same range again and again.
func TestEstimateRefusesEmptyRanges(t *testing.T) {
	var asked atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if asked.Add(1) > 20 { // what the estimate did before: ask again, without end
			w.WriteHeader(http.StatusRequestedRangeNotSatisfiable)
			return
		}
		w.Header().Set("Content-Range", "bytes 0-0/1048576")
		w.WriteHeader(http.StatusPartialContent)
	}))
	t.Cleanup(srv.Close)
	c := &Client{Endpoint: srv.URL}
	l := &Listing{Repo: "org/repo", Commit: strings.Repeat("a", 40)}
	q := Quant{Name: "Q8_0", Files: []File{{Path: "m.gguf", Size: 1 << 20}}}
	_, _, err := c.Estimate(context.Background(), l, q, catalog.EstimateParams{ContextSize: 4096})
	if err == nil || !strings.Contains(err.Error(), "sent no bytes") || asked.Load() != 1 {
		t.Fatalf("err = %v after %d requests, want the empty answer refused after 1", err, asked.Load())
	}
}
