package catalog_test

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/llamatray/llamatray/router/catalog"
	"github.com/llamatray/llamatray/router/testbed"
	"github.com/llamatray/llamatray/router/testbed/bench/harness"
	"github.com/llamatray/llamatray/router/testbed/fitbed"
	"github.com/llamatray/llamatray/router/testbed/ggufwrite"
)

// The first memory estimate against the real llama-server, for each architecture of the test bed
// with its real vocabulary (thin layers, so that the vocabulary-sized terms weigh as they do in real
// models): the buffers llama.cpp logs (model, KV, output, compute) match the estimate's terms, and the
// child's peak resident set after a 500-token request is within ±10 % of the whole estimate (the
// figure GET /models and the scheduler use).
func TestFirstEstimateMatchesRealLlamaServer(t *testing.T) {
	bin := testbed.RealLlamaServer(t)
	dir := t.TempDir()
	rows := []struct {
		spec string
		p    catalog.EstimateParams
	}{
		{"llama3", catalog.EstimateParams{ContextSize: 4096}},
		{"qwen3", catalog.EstimateParams{ContextSize: 4096, CacheType: "q8_0", Parallel: 1}},
		{"qwen3moe", catalog.EstimateParams{ContextSize: 4096}},
		{"gemma3", catalog.EstimateParams{ContextSize: 8192, FlashAttn: "off"}},
		{"phi3", catalog.EstimateParams{ContextSize: 4096, Parallel: 1}},
		{"lfm2", catalog.EstimateParams{ContextSize: 4096}},
		{"nomic-bert", catalog.EstimateParams{ContextSize: 2048}},
		{"bert-rerank", catalog.EstimateParams{ContextSize: 4096}},
	}
	specs := map[string]fitbed.Spec{}
	for _, s := range fitbed.Specs(1) {
		specs[s.Name] = s
	}
	for _, r := range rows {
		t.Run(r.spec, func(t *testing.T) {
			s := specs[r.spec]
			path, err := fitbed.Write(dir, s, ggufwrite.GGMLTypeF16)
			if err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			st, _ := f.Stat()
			est, _, err := catalog.EstimateParts([]catalog.HeaderPart{{R: f, Size: st.Size()}}, nil, r.p)
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			terms, err := catalog.FileTerms(path, r.p)
			if err != nil {
				t.Fatal(err)
			}
			if est.VRAM != 0 {
				t.Errorf("estimate puts %d bytes on a GPU; this machine runs on the CPU", est.VRAM)
			}
			args := argsFor(s, r.p)
			logPath := filepath.Join(dir, r.spec+".log")
			ctx := context.Background()
			d, _, err := harness.StartDirect(ctx, bin, path, args, logPath)
			if err != nil {
				t.Fatal(err)
			}
			err = fitbed.Exercise(ctx, d.URL, s.Name, s.Kind)
			peak, perr := fitbed.PeakRSS(d.PID)
			d.Stop()
			if err != nil || perr != nil {
				t.Fatal(err, perr)
			}
			b, _ := os.ReadFile(logPath)
			logged := fitbed.ParseLog(string(b))
			t.Logf("%s %v: estimate %.1f MiB (weights %.1f, KV %.1f, output %.2f, compute %.1f of %.1f reserved, host %.1f); peak RSS %.1f MiB; logged %+v",
				r.spec, args, mib(est.RAM), mib(terms.Weights), mib(terms.KV), mib(terms.Output), mib(terms.Compute), mib(terms.Reserved), mib(terms.Host), mib(peak), logged)
			near := func(what string, got, want int64, tol float64) {
				if math.Abs(float64(got-want)) > tol*float64(want)+float64(64<<10) {
					t.Errorf("%s: estimate %.2f MiB, llama-server %.2f MiB (tolerance %.0f %%)", what, mib(got), mib(want), tol*100)
				}
			}
			near("model buffer", terms.Weights, logged.Model, 0.01)
			near("KV buffer", terms.KV, logged.KV, 0.01)
			near("output buffer", terms.Output, logged.Output, 0.01)
			near("compute buffer", terms.Reserved, logged.Compute, 0.15)
			near("whole estimate vs peak RSS", est.RAM, peak, 0.10)
		})
	}
}

// argsFor is the llama-server command line Llamatray builds for a model run with p (engine.args and
// the service's settings), with one thread and the informational log lines that report buffers.
func argsFor(s fitbed.Spec, p catalog.EstimateParams) []string {
	a := []string{"-c", strconv.Itoa(p.ContextSize), "-t", "1", "-v"}
	if s.Kind != fitbed.Chat {
		a = append(a, "--embeddings")
	}
	if p.FlashAttn != "" {
		a = append(a, "-fa", p.FlashAttn)
	}
	if p.Parallel > 0 {
		a = append(a, "-np", strconv.Itoa(p.Parallel))
	}
	if p.CacheType != "" {
		a = append(a, "-ctk", p.CacheType, "-ctv", p.CacheType)
	}
	return a
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }
