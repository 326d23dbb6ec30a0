package service

import (
	"io"
	"log/slog"
	"testing"

	"github.com/llamatray/llamatray/router/config"
)

// Every model and variant with rules gets compiled ones, a variant's over its model's; the others
// none, so their requests go through untouched.
func TestRequestRules(t *testing.T) {
	cfg := config.Default()
	cfg.Models = map[string]config.Model{
		"a": {SetParams: map[string]any{"temperature": 0.2}, Variants: map[string]config.Model{
			"hot":   {SetParams: map[string]any{"temperature": 1.5}, StripParams: []string{"seed"}},
			"plain": {CtxSize: 512},
		}},
		"b": {CtxSize: 1024},
	}
	rs := requestRules(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if len(rs) != 3 || rs["b"] != nil {
		t.Fatalf("rules for %v, want a, a@hot, a@plain", rs)
	}
	for id, want := range map[string]string{
		"a":       `{"seed":1,"temperature":0.2}`,
		"a@hot":   `{"temperature":1.5}`,
		"a@plain": `{"seed":1,"temperature":0.2}`,
	} {
		got, err := rs[id].Apply([]byte(`{"seed":1}`))
		if err != nil || string(got) != want {
			t.Errorf("%s: %s, %v; want %s", id, got, err, want)
		}
	}
}
