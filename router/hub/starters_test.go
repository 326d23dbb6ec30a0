package hub

import (
	"context"
	"errors"
	"testing"

	"github.com/llamatray/llamatray/router/catalog"
	"github.com/llamatray/llamatray/router/fit"
	"github.com/llamatray/llamatray/router/testbed/fakehub"
)

// Starters the Hub still has are shown with their quant and fit badge, in list order; one it no
// longer has, or whose quant is gone, is left out; a Hub that cannot be reached says so.
func TestStartersOnHub(t *testing.T) {
	fh := fakehub.New()
	t.Cleanup(fh.Close)
	for _, r := range []string{"Org/Chat-GGUF", "Org/Embed-GGUF"} {
		if err := fh.AddModelRepo(t.TempDir(), r, "Q4_K_M", "Q8_0"); err != nil {
			t.Fatal(err)
		}
	}
	list := []Starter{
		{"chat", "Org/Chat-GGUF:Q4_K_M", "a chat model"},
		{"coding", "Org/Gone-GGUF:Q4_K_M", "deleted from the Hub"},
		{"embeddings", "Org/Embed-GGUF:Q8_0", "an embedder"},
		{"rerank", "Org/Embed-GGUF:IQ1_S", "a quant that is not there"},
	}
	c := &Client{Endpoint: fh.URL()}
	got, err := c.StartersOnHub(context.Background(), list, catalog.EstimateParams{ContextSize: 512}, fit.Room{Limit: 8 << 30, Free: 8 << 30}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Name != "Org/Chat-GGUF:Q4_K_M" || got[1].Name != "Org/Embed-GGUF:Q8_0" {
		t.Fatalf("starters shown: %+v", got)
	}
	if got[0].Fit != fit.Now || got[0].Size <= 0 || got[0].Model != "Org/Chat-GGUF:Q4_K_M" {
		t.Errorf("the first starter's quant: %+v", got[0].QuantFit)
	}
	off := &Client{Endpoint: "http://no-such-host.invalid"}
	if _, err := off.StartersOnHub(context.Background(), list, catalog.EstimateParams{ContextSize: 512}, fit.Room{}, nil); !errors.Is(err, ErrUnreachable) {
		t.Errorf("offline: %v", err)
	}
	for _, s := range Starters {
		if _, err := ParseRef(s.Name); err != nil || s.Use == "" || s.Why == "" {
			t.Errorf("starter %+v: %v", s, err)
		}
	}
}
