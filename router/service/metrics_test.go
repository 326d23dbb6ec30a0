package service

import (
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/config"
)

// GET /metrics' counters outlive the router a settings change replaces.
func TestMetricsSurviveASettingsChange(t *testing.T) {
	svc := pinService(t, filepath.Join(t.TempDir(), "config.toml"))
	base := "http://" + svc.ListenAddr()
	resp, err := http.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close() // 503: no llama-server here; counted all the same
	want := `llamatray_requests_total{code="503",model="m"} 1`
	scrape := func() string {
		r, err := http.Get(base + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer r.Body.Close()
		b, _ := io.ReadAll(r.Body)
		return string(b)
	}
	if got := scrape(); !strings.Contains(got, want) {
		t.Fatalf("before the change: no %s in\n%s", want, got)
	}
	if err := svc.Edit(func(c *config.Config) error { c.IdleSleep = config.Duration(7 * time.Minute); return nil }); err != nil {
		t.Fatal(err)
	}
	if got := scrape(); !strings.Contains(got, want) {
		t.Fatalf("after the change: no %s in\n%s", want, got)
	}
}
