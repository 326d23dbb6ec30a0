package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/llamatray/llamatray/router/mem"
	"github.com/llamatray/llamatray/router/sched"
)

// measureSoon asks the monitor for a sample now (non-blocking; safe under mu).
func (e *Engine) measureSoon() {
	select {
	case e.kick <- struct{}{}:
	default:
	}
}

// monitor samples memory every PressureEvery, and when asked: the system's available RAM, and what each
// child really holds. It learns footprints and unloads idle models under memory pressure.
func (e *Engine) monitor() {
	defer e.wg.Done()
	tick, stopTick := e.fx.Every(e.o.PressureEvery)
	defer stopTick()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-e.stop
		cancel()
	}()
	for {
		select {
		case <-e.stop:
			return
		case <-tick:
		case <-e.kick:
		}
		e.sample(ctx)
	}
}

type pidSample struct {
	id  string
	gen uint64
	pid int
	rss int64
	ok  bool
}

// sample measures outside the lock, then applies the numbers under it.
func (e *Engine) sample(ctx context.Context) {
	sys, sysErr := e.o.Memory.System(ctx)
	e.mu.Lock()
	var pids []pidSample
	for _, m := range e.models {
		if m.pid > 0 && m.state.Running() {
			pids = append(pids, pidSample{id: m.id, gen: m.gen, pid: m.pid})
		}
	}
	e.mu.Unlock()
	for i := range pids {
		rss, err := e.o.Memory.ProcessRSS(ctx, pids[i].pid)
		pids[i].rss, pids[i].ok = rss, err == nil
	}
	vram := map[int]int64{}
	if sysErr == nil && len(sys.GPUs) > 0 && !sys.Unified {
		if v, err := e.o.Memory.ProcessVRAM(ctx); err == nil {
			vram = v
		}
	}

	var learn []footprintUpdate
	e.transact(func(now time.Time) []action {
		e.applySample(sys, sysErr, pids, vram, &learn)
		return e.pressure(now)
	})
	if len(learn) > 0 {
		if err := e.fp.save(); err != nil {
			e.log.Warn("saving learned footprints failed", "err", err)
		}
	}
}

// applySample records one round of measurements and learns footprints. Called with mu held.
func (e *Engine) applySample(sys mem.System, sysErr error, pids []pidSample, vram map[int]int64, learn *[]footprintUpdate) {
	before := e.deviceNames()
	if sysErr == nil {
		e.sys, e.sysOK = sys, true
	} else {
		e.log.Warn("memory probe failed", "err", sysErr)
	}
	e.takeWorkerDevices(before)
	for _, p := range pids {
		m := e.models[p.id]
		if m == nil || m.gen != p.gen || !p.ok || !m.state.Running() {
			continue
		}
		m.measured = e.measuredMem(m, p.rss, vram[p.pid])
		switch m.state {
		case StateLoaded:
			// Within a run a model counts at least what it was planned with: RSS right after
			// loading misses the KV cache pages it has not touched yet. The peak is learned for
			// the next run.
			m.held = m.measured.Max(m.plan)
			if m.devices != (sched.Mem{}) {
				m.held.GPU = m.measured.GPU // the child's own report: what it allocated, KV cache included
			}
			if peak := m.peak.Max(m.measured); peak != m.peak {
				m.peak = peak
				fp := footprint{RAM: peak.RAM, Devices: e.deviceBytes(peak, false)}
				if e.sys.Unified {
					fp.RAM -= peak.VRAM() // need adds the GPU's part back
				}
				if u, ok := e.fp.update(footprintKey(m.entry, m.args), fp); ok {
					m.learned = u.fp
					e.shareLearned(m, u)
					*learn = append(*learn, u)
				}
			}
		case StateSleeping:
			if m.leases == 0 {
				m.held = m.measured
			}
		}
	}
}

// measuredMem is what m holds now: its RSS as RAM, and on each device what the child reported it
// allocated there (while it sleeps, nothing). Without a buffer report, the VRAM a GPU driver reports
// for the process (nvidia-smi: one figure over all devices) is spread as m's plan spread it, or put
// on the only device. Called with mu held.
func (e *Engine) measuredMem(m *model, rss, vram int64) sched.Mem {
	out := sched.Mem{RAM: rss}
	switch {
	case m.state == StateSleeping:
	case m.devices != (sched.Mem{}):
		out.GPU = m.devices.GPU
	case vram > 0 && m.plan.VRAM() > 0:
		out = out.Add(sched.Split(0, vram, 0, m.plan.GPU[:]))
	case vram > 0 && e.localGPUs() == 1:
		out.GPU[0] = vram
	}
	if e.sys.Unified {
		out.RAM = max(out.RAM, out.VRAM())
	}
	return out
}

// pressure stops the idle models sched.Pressure picks when the system's available RAM is below the
// reserve. Called with mu held.
func (e *Engine) pressure(now time.Time) []action {
	if !e.sysOK {
		return nil
	}
	ids, deficit, freed := sched.Pressure(e.running(), e.sys.Available, e.o.Reserve)
	if deficit <= 0 {
		return nil
	}
	if len(ids) == 0 {
		e.log.Warn("memory pressure, but every model is busy or pinned", "available_mib", e.sys.Available>>20, "reserve_mib", e.o.Reserve>>20)
		return nil
	}
	e.log.Warn("memory pressure: unloading idle models", "available_mib", e.sys.Available>>20, "reserve_mib", e.o.Reserve>>20, "deficit_mib", deficit>>20, "models", ids, "freeing_mib", freed>>20)
	var acts []action
	for _, id := range ids {
		m := e.models[id]
		acts = append(acts, e.stopModel(m, false, CausePressure, "")...)
		e.publish(Event{Kind: EventPressure, Model: id, State: m.state, Active: m.leases, Cause: CausePressure,
			Message: fmt.Sprintf("unloaded under memory pressure: %d MiB available, reserve %d MiB", e.sys.Available>>20, e.o.Reserve>>20)})
	}
	return acts
}
