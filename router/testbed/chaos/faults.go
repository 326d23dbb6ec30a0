package main

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/llamatray/llamatray/router/engine"
	"github.com/llamatray/llamatray/router/mem"
	"github.com/llamatray/llamatray/router/testbed"
	"github.com/llamatray/llamatray/router/testbed/bench/harness"
)

// pressureProbe is the machine's memory probe, except that while hog > 0 it reports that much less
// available RAM: another program grew. What Llamatray frees while it lasts shows up as usual, so
// unloading enough ends the shortage, as it would on a real machine.
type pressureProbe struct {
	real   mem.Probe
	hog    atomic.Int64 // bytes taken by the imaginary program; 0 = no pressure
	served atomic.Int64 // samples answered under pressure
}

func (p *pressureProbe) System(ctx context.Context) (mem.System, error) {
	s, err := p.real.System(ctx)
	if err != nil {
		return s, err
	}
	if h := p.hog.Load(); h > 0 {
		s.Available = max(s.Available-h, 0)
		p.served.Add(1)
	}
	return s, nil
}

func (p *pressureProbe) ProcessRSS(ctx context.Context, pid int) (int64, error) {
	return p.real.ProcessRSS(ctx, pid)
}

func (p *pressureProbe) ProcessVRAM(ctx context.Context) (map[int]int64, error) {
	return p.real.ProcessVRAM(ctx)
}

// pressureInfo says what the injected pressure was.
type pressureInfo struct {
	start, end time.Time
	hog        int64
	available  int64 // what the engine was told was available
	samples    int64 // engine samples that saw it
}

// injectPressure makes Available read `deficit` below reserve for at least `hold`, and until the
// engine has sampled it twice (it samples every 2 s), at most 30 s.
func injectPressure(ctx context.Context, p *pressureProbe, reserve, deficit int64, hold time.Duration) (pressureInfo, error) {
	sys, err := p.real.System(ctx)
	if err != nil {
		return pressureInfo{}, fmt.Errorf("memory pressure: %w", err)
	}
	info := pressureInfo{start: time.Now(), hog: sys.Available - reserve + deficit, available: reserve - deficit}
	before := p.served.Load()
	p.hog.Store(info.hog)
	defer p.hog.Store(0)
	deadline := info.start.Add(30 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for time.Since(info.start) < hold || p.served.Load()-before < 2 {
		if time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return info, ctx.Err()
		case <-tick.C:
		}
	}
	info.end = time.Now()
	info.samples = p.served.Load() - before
	if info.samples == 0 {
		return info, fmt.Errorf("memory pressure was never sampled by the engine within 30 s")
	}
	return info, nil
}

// killInfo is the child killed with SIGKILL mid-run.
type killInfo struct {
	model  string
	pid    int
	active int // leases it held when killed
	at     time.Time
}

// killBusyChild SIGKILLs the child of a loaded model serving requests, found through the engine's
// snapshot. It waits up to 20 s for a busy one, then takes any ready one.
func killBusyChild(ctx context.Context, eng *engine.Engine) (killInfo, error) {
	start := time.Now()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		var pick *engine.ModelStatus
		for _, m := range eng.Models() {
			if m.State != engine.StateLoaded || m.PID <= 0 {
				continue
			}
			if m.Active > 0 || time.Since(start) > 20*time.Second {
				pick = &m
				break
			}
		}
		if pick != nil {
			proc, err := os.FindProcess(pick.PID)
			if err != nil {
				return killInfo{}, fmt.Errorf("finding %s's child %d: %w", pick.ID, pick.PID, err)
			}
			k := killInfo{model: pick.ID, pid: pick.PID, active: pick.Active, at: time.Now()}
			if err := proc.Kill(); err != nil {
				return killInfo{}, fmt.Errorf("killing %s's child %d: %w", pick.ID, pick.PID, err)
			}
			return k, nil
		}
		if time.Since(start) > 60*time.Second {
			return killInfo{}, fmt.Errorf("no loaded model to kill within 60 s")
		}
		select {
		case <-ctx.Done():
			return killInfo{}, ctx.Err()
		case <-tick.C:
		}
	}
}

// waitGone waits until every PID is gone (absent or a zombie), up to timeout, and returns those
// still running.
func waitGone(pids map[int]string, timeout time.Duration) map[int]string {
	left := map[int]string{}
	testbed.Poll(context.Background(), timeout, 10*time.Millisecond, func() bool {
		clear(left)
		for pid, who := range pids {
			if !harness.Gone(pid) {
				left[pid] = who
			}
		}
		return len(left) == 0
	})
	return left
}
