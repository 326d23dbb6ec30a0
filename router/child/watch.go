package child

import (
	"context"
	"errors"
	"io"
	"os/exec"
	"time"
)

// phase is where a process is in its life, as the supervisor sees it.
type phase int

const (
	phaseLoading phase = iota
	phaseReady
	phaseSleeping
)

// readyCatchUp bounds how long becoming ready waits for stderr to be read up to that moment.
const readyCatchUp = 250 * time.Millisecond

// outcome is what the supervisor learned about one process by the time it was reaped.
type outcome struct {
	ready      bool // it became ready at some point
	timedOut   bool // killed for the load timeout
	bindFailed bool // exited while loading and said its port was taken
	deliberate bool // a Stop was requested before the exit was seen
}

// watch is the supervisor's state for one process.
type watch struct {
	c        *Child
	p        *proc
	phase    phase
	progress float64
	sawState bool  // the process printed at least one state line
	acted    int32 // the stop level already acted on
	timedOut bool

	loadStart  time.Time
	loadTimer  *time.Timer
	loadC      <-chan time.Time // nil once ready or stopping
	killTimer  *time.Timer
	killC      <-chan time.Time // set during a graceful stop
	probeTimer *time.Timer
	probeC     <-chan time.Time // set while a probe is scheduled
	probing    bool             // a probe goroutine is running
	ctx        context.Context  // cancelled when the process is done with
	cancel     context.CancelFunc
}

// run watches process p until it is reaped.
func (c *Child) run(p *proc) outcome {
	w := &watch{c: c, p: p, loadStart: time.Now()}
	w.ctx, w.cancel = context.WithCancel(context.Background())
	w.loadTimer = time.NewTimer(c.spec.LoadTimeout)
	w.loadC = w.loadTimer.C
	w.probeTimer = time.NewTimer(time.Hour)
	w.probeTimer.Stop()
	defer w.close()

	c.emit(Event{Kind: Loading, PID: p.pid, Addr: p.addr})
	w.onStop()
	for {
		w.schedule()
		select {
		case err := <-p.waitCh:
			return w.exited(err)
		case m := <-p.states:
			w.onState(m)
		case <-c.kick:
			w.onStop()
		case <-w.loadC:
			w.onLoadTimer()
		case <-w.killC:
			w.killC = nil
			p.log.Warn("llama-server did not exit within the stop timeout; killing it", "timeout", c.spec.StopTimeout)
			w.kill()
		case <-w.probeC:
			w.probeC = nil
			w.startProbe()
		case r := <-p.probes:
			w.probing = false
			w.onProbe(r)
		}
	}
}

// close releases what run used.
func (w *watch) close() {
	w.cancel()
	close(w.p.quit)
	w.loadTimer.Stop()
	w.probeTimer.Stop()
	if w.killTimer != nil {
		w.killTimer.Stop()
	}
	w.c.client.CloseIdleConnections() // the process has ended
}

// exited handles the process's reaping: the output it wrote before exiting is
// processed first, so a ready line just before a crash still counts.
func (w *watch) exited(err error) outcome {
	p := w.p
	for len(p.states) > 0 { // only this goroutine receives from it
		w.onState(<-p.states)
	}
	for _, s := range []*lineSink{p.stdout, p.stderr} {
		if l, ok := s.takePartial(); ok {
			if m, ok := parseStateLine(l); ok {
				w.onState(m)
			} else {
				p.logLine(l)
			}
		}
	}
	leftovers := errors.Is(err, exec.ErrWaitDelay)
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) { // more than an unsuccessful exit
		p.log.Warn("waiting for llama-server", "err", err)
	}
	if p.os != nil {
		p.os.release(leftovers)
	}
	ready := w.phase != phaseLoading
	return outcome{
		ready:      ready,
		timedOut:   w.timedOut,
		bindFailed: !ready && !w.timedOut && p.bindFailed.Load(),
		deliberate: w.c.stopLevel.Load() != stopNone,
	}
}

// onStop acts on a raised stop level.
func (w *watch) onStop() {
	level := w.c.stopLevel.Load()
	if level <= w.acted {
		return
	}
	w.acted = level
	w.loadC = nil // a stopping child is not timed out
	if level == stopForce {
		w.killC = nil
		w.p.log.Info("killing llama-server")
		w.kill()
		return
	}
	w.p.log.Info("stopping llama-server", "timeout", w.c.spec.StopTimeout)
	// The exit command is the clean stop of a loaded router child (exit 0, also
	// while sleeping). A loading child reads stdin only once loaded, and a child
	// without the protocol (no state lines) never does: those get SIGTERM, whose
	// default action ends a loading llama-server at once. A loaded router child
	// gets no SIGTERM: llama-server's handler can deadlock with a stream in
	// flight, where the exit command cannot.
	if _, err := io.WriteString(w.p.stdin, ExitCommand+"\n"); err != nil {
		w.p.log.Debug("writing the exit command", "err", err)
	}
	switch {
	case w.phase == phaseLoading && !canSignal:
		w.kill() // nothing to drain yet, and no signal to ask with
	case w.phase == phaseLoading || !w.sawState:
		if err := w.p.os.terminate(); err != nil {
			w.p.log.Debug("signalling llama-server", "err", err)
		}
	}
	w.killTimer = time.NewTimer(w.c.spec.StopTimeout)
	w.killC = w.killTimer.C
}

// kill ends the process now.
func (w *watch) kill() {
	if err := w.p.os.kill(); err != nil {
		w.p.log.Warn("killing llama-server", "err", err)
	}
}

// onLoadTimer kills a loading process that printed nothing for LoadTimeout.
func (w *watch) onLoadTimer() {
	last := time.Unix(0, w.p.lastOutput.Load())
	if last.Before(w.loadStart) {
		last = w.loadStart
	}
	if remaining := w.c.spec.LoadTimeout - time.Since(last); remaining > 0 {
		w.loadTimer.Reset(remaining)
		return
	}
	w.loadC = nil
	w.timedOut = true
	w.p.log.Warn("llama-server load timed out; killing it", "timeout", w.c.spec.LoadTimeout)
	w.kill()
}

// onState applies one state line.
func (w *watch) onState(m stateMsg) {
	w.sawState = true
	if w.timedOut || w.acted != stopNone {
		return
	}
	ev := Event{PID: w.p.pid, Addr: w.p.addr}
	switch m.State {
	case "loading":
		if w.phase == phaseLoading && m.HasProgress && m.Progress != w.progress {
			w.progress = m.Progress
			ev.Kind, ev.Progress = Loading, m.Progress
			w.c.emit(ev)
		}
	case "ready":
		switch w.phase {
		case phaseLoading:
			w.becomeReady("state line")
		case phaseSleeping:
			w.phase = phaseReady
			w.p.log.Info("llama-server woke")
			ev.Kind = Woke
			w.c.emit(ev)
		}
	case "sleeping":
		if w.phase == phaseReady {
			w.phase = phaseSleeping
			w.p.log.Info("llama-server is sleeping")
			ev.Kind = Sleeping
			w.c.emit(ev)
		}
	}
}

// becomeReady marks the process loaded. The buffer report is on stderr, written before the state
// line or the health answer that made it ready, but read paced: it is read up to now first.
func (w *watch) becomeReady(how string) {
	if w.p.pump != nil {
		w.p.pump.catchUp(readyCatchUp)
	}
	w.phase = phaseReady
	w.p.loaded.Store(true)
	w.loadC = nil
	w.loadTimer.Stop()
	w.p.log.Info("llama-server ready", "by", how, "load_time", time.Since(w.loadStart).Round(time.Millisecond))
	w.c.emit(Event{Kind: Ready, PID: w.p.pid, Addr: w.p.addr, Progress: 1, Buffers: w.p.buffers.perDevice()})
}

// wantProbe says which probe the current phase needs.
func (w *watch) wantProbe() probeKind {
	switch {
	case w.acted != stopNone || w.timedOut:
		return probeNone
	case w.phase == phaseLoading:
		return probeHealth
	case !w.sawState:
		return probeProps
	}
	return probeNone
}

// schedule arms the probe timer when a probe is needed and none is pending.
func (w *watch) schedule() {
	kind := w.wantProbe()
	if kind == probeNone {
		if w.probeC != nil {
			w.probeTimer.Stop()
			w.probeC = nil
		}
		return
	}
	if w.probing || w.probeC != nil {
		return
	}
	interval := w.c.spec.HealthInterval
	if kind == probeProps {
		interval = PropsInterval
	}
	w.probeTimer.Reset(interval)
	w.probeC = w.probeTimer.C
}

// startProbe runs one probe in its own goroutine; the result comes back on p.probes.
func (w *watch) startProbe() {
	kind := w.wantProbe()
	if kind == probeNone {
		return
	}
	w.probing = true
	ctx, client, addr, results := w.ctx, w.c.client, w.p.addr, w.p.probes
	go func() { results <- probe(ctx, client, addr, kind) }()
}

// onProbe applies a probe result. State lines, when the child prints them,
// decide sleep and wake; /health can only make a loading process ready.
func (w *watch) onProbe(r probeResult) {
	if w.timedOut || w.acted != stopNone {
		return
	}
	switch r.kind {
	case probeHealth:
		if r.healthy && w.phase == phaseLoading && !w.p.bindFailed.Load() {
			w.becomeReady("/health")
		}
	case probeProps:
		if w.sawState || !r.known {
			return
		}
		ev := Event{PID: w.p.pid, Addr: w.p.addr}
		switch {
		case r.sleeping && w.phase == phaseReady:
			w.phase, ev.Kind = phaseSleeping, Sleeping
		case !r.sleeping && w.phase == phaseSleeping:
			w.phase, ev.Kind = phaseReady, Woke
		default:
			return
		}
		w.p.log.Info("llama-server sleep state changed", "event", ev.Kind, "by", "/props")
		w.c.emit(ev)
	}
}
