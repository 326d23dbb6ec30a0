package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/llamatray/llamatray/router/testbed/bench/harness"
)

// baselineTarget is "baseline": another llamatray binary (an earlier build, say) started as the
// router is, measured in the same rotation, so that a change is judged against the same noise
// (-baseline PATH). Its process is stopped by the returned function.
func startBaseline(ctx context.Context, bin string, pcfg harness.ProcessConfig, model, tmp string) (target, func(), error) {
	dir := filepath.Join(tmp, "baseline")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return target{}, nil, err
	}
	var env []string
	for _, e := range pcfg.Env {
		if !strings.HasPrefix(e, "LLAMATRAY_CPUPROFILE=") {
			env = append(env, e)
		}
	}
	pcfg.Env = env
	p, err := harness.StartProcess(ctx, bin, pcfg, dir)
	if err != nil {
		return target{}, nil, fmt.Errorf("baseline: %w", err)
	}
	id, err := p.ModelID(ctx, model)
	if err == nil {
		err = p.Load(ctx, id)
	}
	if err != nil {
		p.Stop()
		return target{}, nil, fmt.Errorf("baseline: preloading: %w", err)
	}
	return target{name: "baseline", url: p.ChatURL(), model: id, cpu: p.CPU}, p.Stop, nil
}

// baselineMarkdown is the router against the baseline, cell by cell ("" when none ran).
func (r report) baselineMarkdown(specs []cellSpec) string {
	var b strings.Builder
	for _, spec := range specs {
		bl := r.result(spec, "baseline")
		if bl.ok == 0 {
			continue
		}
		if b.Len() == 0 {
			b.WriteString("\nBaseline: another llamatray binary (`-baseline`), started and measured as the router is, in the same rotation.\n\n")
			b.WriteString("| mode | c | throughput router/baseline | added p50 ms router / baseline | CPU µs/request router / baseline |\n")
			b.WriteString("| --- | ---: | ---: | ---: | ---: |\n")
		}
		d, rt := r.pair(spec)
		fmt.Fprintf(&b, "| %s | %d | %.3f× | %+.2f / %+.2f | %.0f / %.0f |\n", spec.mode(), spec.concurrency, ratioOf(rt, bl),
			ms(harness.Median(rt.lat)-harness.Median(d.lat)), ms(harness.Median(bl.lat)-harness.Median(d.lat)),
			us(rt.serverCPUPerRequest()), us(bl.serverCPUPerRequest()))
	}
	return b.String()
}
