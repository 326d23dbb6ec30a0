package main

// -fit: the first memory estimate against what llama-server really holds, across architectures
// (`make bench-fit`, the Memory fit section of docs/benchmarks.md). Each row writes nothing new: the
// models are written once (sparse, with their real vocabularies and tensor layouts); each row starts
// Llamatray with the row's settings for one model, reads its estimate (GET /models' figure, before
// any load, so no learned footprint), loads the model, sends a 500-token request through Llamatray
// and reads the child's peak resident set (VmHWM). gguf-parser-go's figure is its llama.cpp estimate
// for the same settings on a machine without GPU, as Llamatray used it before.

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	gguf "github.com/gpustack/gguf-parser-go"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/testbed/bench/harness"
	"github.com/llamatray/llamatray/router/testbed/fitbed"
	"github.com/llamatray/llamatray/router/testbed/ggufwrite"
)

const fitHeading = "## Memory fit"

// fitScale widens the test bed's models for the bench (fitbed.Specs).
const fitScale = 4

// fitSetting is one row's llama-server settings, as the configuration gives them.
type fitSetting struct {
	ctx       int
	cacheType string // "" = f16
	slots     int    // -np; 0 = auto (4)
	flash     string // "on", "off"
}

var fitSettings = []fitSetting{
	{4096, "", 1, "on"},
	{32768, "", 4, "off"},
	{32768, "q8_0", 4, "on"},
}

type fitRow struct {
	arch, weights string
	set           fitSetting
	est, parser   int64
	peak          int64
	err           error
}

func mainFit(ctx context.Context, o options) int { return mainSection(ctx, o, fitHeading, runFit) }

func runFit(ctx context.Context, o options) (string, error) {
	machine := harness.Describe(ctx, o.llamaServer)
	loadStart := harness.LoadAvg()
	tmp, cleanup, err := workDir("llamatray-bench-fit-", o.keep)
	if err != nil {
		return "", err
	}
	defer cleanup()
	dir := filepath.Join(tmp, "models")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	var rows []*fitRow
	for i, s := range fitbed.Specs(fitScale) {
		typ, tname := uint32(ggufwrite.GGMLTypeF16), "F16"
		if i%2 == 1 {
			typ, tname = ggufwrite.GGMLTypeQ8_0, "Q8_0"
		}
		path, err := fitbed.Write(dir, s, typ)
		if err != nil {
			return "", err
		}
		st, _ := os.Stat(path)
		for _, set := range fitSettings {
			r := &fitRow{arch: s.Name, weights: fmt.Sprintf("%s %.0f MB", tname, float64(st.Size())/1e6), set: set}
			progress(fmt.Sprintf("%s ctx %d %s np %d fa %s (load %s)", s.Name, set.ctx, set.cacheType, set.slots, set.flash, harness.LoadAvg()))
			r.parser, _ = parserEstimate(path, set)
			r.est, r.peak, r.err = fitMeasure(ctx, o, tmp, s, set)
			if r.err != nil {
				progress("  " + r.err.Error())
			}
			rows = append(rows, r)
		}
	}
	return fitMarkdown(machine, loadStart+" → "+harness.LoadAvg(), rows), nil
}

// fitMeasure starts Llamatray with set for model s alone, and returns its estimate and the child's
// peak resident set after one request.
func fitMeasure(ctx context.Context, o options, tmp string, s fitbed.Spec, set fitSetting) (est, peak int64, err error) {
	cfg, err := harness.Config(filepath.Join(tmp, "models"), o.llamaServer)
	if err != nil {
		return 0, 0, err
	}
	cfg.Defaults.Args = append([]string{"-t", "1"}, strings.Fields(o.extraArgs)...)
	cfg.Models = map[string]config.Model{s.Name: {CtxSize: set.ctx, CacheType: set.cacheType, Parallel: set.slots, FlashAttn: set.flash}}
	svc, err := harness.StartService(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	if err != nil {
		return 0, 0, err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = svc.Stop(sctx)
	}()
	est = svc.Status(s.Name).EstimateBytes
	if err := svc.Engine().Load(ctx, s.Name); err != nil {
		return est, 0, fmt.Errorf("loading %s: %w", s.Name, err)
	}
	if err := fitbed.Exercise(ctx, svc.Base, s.Name, s.Kind); err != nil {
		return est, 0, err
	}
	peak, err = fitbed.PeakRSS(svc.Status(s.Name).PID)
	return est, peak, err
}

// parserEstimate is gguf-parser-go's llama.cpp estimate of the file at path run with set on the CPU
// (host memory, weights resident), as Llamatray's estimate was before it sized the terms itself.
func parserEstimate(path string, set fitSetting) (int64, error) {
	gf, err := gguf.ParseGGUFFile(path, gguf.SkipLargeMetadata())
	if err != nil {
		return 0, err
	}
	opts := []gguf.GGUFRunEstimateOption{gguf.WithLLaMACppContextSize(int32(set.ctx)), gguf.WithLLaMACppOffloadLayers(0)}
	if set.slots > 0 {
		opts = append(opts, gguf.WithParallelSize(int32(set.slots)))
	}
	if set.flash == "on" {
		opts = append(opts, gguf.WithFlashAttention())
	}
	if set.cacheType == "q8_0" {
		opts = append(opts, gguf.WithLLaMACppCacheKeyType(gguf.GGMLTypeQ8_0), gguf.WithLLaMACppCacheValueType(gguf.GGMLTypeQ8_0))
	}
	s := gf.EstimateLLaMACppRun(opts...).SummarizeItem(false, 0, 0)
	n := int64(s.RAM.NonUMA)
	for _, v := range s.VRAMs {
		n += int64(v.NonUMA)
	}
	return n, nil
}

func fitMarkdown(machine harness.Machine, load string, rows []*fitRow) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\n", fitHeading)
	fmt.Fprintf(&b, "The first memory estimate (before a model has run; afterwards the learned footprint replaces it) against the peak resident set (VmHWM) of the llama-server child after a 500-token request sent through Llamatray. Models: random-weight (zero) sparse GGUFs with the real vocabularies and tensor layouts of each architecture, %d-wide, few blocks, so that the vocabulary-sized terms weigh as in real small models; the 2-core, 24 GiB machine is shared, which keeps them at 0.1–1.1 GB rather than 1–2 GB; the rows vary context, cache type, slots and flash attention together (three settings per model) rather than as a full cross product. Error = estimate / measured − 1. gguf-parser-go v0.28.1 is Llamatray's former estimate.\n\n", 256*fitScale)
	fmt.Fprintf(&b, "Machine: %s. Load average %s.\n\n", machine, load)
	b.WriteString("| model | weights | ctx | KV | slots | flash attn | Llamatray | gguf-parser-go | measured | error | parser error |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	var errs []float64
	worst := 0.0
	for _, r := range rows {
		kv := r.set.cacheType
		if kv == "" {
			kv = "f16"
		}
		if r.err != nil {
			fmt.Fprintf(&b, "| %s | %s | %d | %s | %d | %s | %s | %s | failed: %s | | |\n", r.arch, r.weights, r.set.ctx, kv, r.set.slots, r.set.flash, harness.MiB(r.est), harness.MiB(r.parser), strings.ReplaceAll(r.err.Error(), "|", "/"))
			continue
		}
		e := float64(r.est)/float64(r.peak) - 1
		pe := float64(r.parser)/float64(r.peak) - 1
		errs = append(errs, e)
		if math.Abs(e) > math.Abs(worst) {
			worst = e
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %s | %d | %s | %s | %s | %s | %+.1f %% | %+.0f %% |\n", r.arch, r.weights, r.set.ctx, kv, r.set.slots, r.set.flash, harness.MiB(r.est), harness.MiB(r.parser), harness.MiB(r.peak), 100*e, 100*pe)
	}
	if len(errs) > 0 {
		slices.Sort(errs)
		within := 0
		for _, e := range errs {
			if math.Abs(e) <= 0.10 {
				within++
			}
		}
		fmt.Fprintf(&b, "\n%d of %d rows within ±10 %%; median error %+.1f %%; lowest %+.1f %%, highest %+.1f %%.\n", within, len(errs), 100*errs[len(errs)/2], 100*errs[0], 100*errs[len(errs)-1])
	}
	b.WriteString("\nReproduce: `make bench-fit` (`go run ./router/testbed/bench -fit -llama-server PATH -out docs/benchmarks.md`).\n")
	return b.String()
}
