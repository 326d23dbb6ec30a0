package engine

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/llamatray/llamatray/router/child"
	"github.com/llamatray/llamatray/router/internal/backoff"
	"github.com/llamatray/llamatray/router/sched"
)

// startModel moves m to loading and returns the spawn action. Called with mu held.
func (e *Engine) startModel(m *model, now time.Time) action {
	e.gen++
	m.gen = e.gen
	m.state = StateLoading
	m.stopReq, m.forceReq = false, false
	m.progress = 0
	m.errMsg = ""
	m.exitCode = nil
	m.workers, m.rpc, m.lost = slices.Clone(m.set.Workers), nil, nil
	m.held = e.need(m) // over its workers' devices too
	m.plan = m.held
	m.measured = sched.Mem{}
	m.peak = sched.Mem{}
	m.devices = sched.Mem{}
	m.lastUsed = now
	m.args = e.args(m)
	m.fit = e.fitArgs(m)
	m.binary = e.o.Binary
	spec := child.Spec{
		Model:       m.id,
		Binary:      e.o.Binary,
		Args:        append(slices.Clone(m.args), m.fit...),
		Env:         e.o.Env,
		RouterPort:  e.o.RouterPort,
		Addrs:       e.addrs,
		LoadTimeout: e.o.LoadTimeout,
		StopTimeout: e.o.StopTimeout,
		Logger:      e.log,
	}
	e.log.Info("loading model", "model", m.id, "need_mib", e.shown(m.held)>>20, "need_devices_mib", mibPerDevice(e.deviceBytes(m.held, false)), "learned", !m.learned.zero(), "fit", m.fit)
	e.publish(Event{Kind: EventState, Model: m.id, State: m.state, Active: m.leases})
	return action{start: &spec, workers: m.workers, id: m.id, gen: m.gen}
}

// stopModel moves m to stopping for cause c (forModel: the model it is done for, if any) and returns
// the stop action, if its child is registered yet. Called with mu held.
func (e *Engine) stopModel(m *model, force bool, c Cause, forModel string) []action {
	if !m.state.Running() {
		return nil
	}
	if m.state == StateStopping && !force {
		return nil
	}
	m.state = StateStopping
	e.publish(Event{Kind: EventState, Model: m.id, State: m.state, Active: m.leases, Cause: c, For: forModel, Message: c.message(forModel)})
	if m.child == nil {
		m.stopReq = true
		m.forceReq = m.forceReq || force
		return nil
	}
	return []action{{stop: m.child, force: force, id: m.id, gen: m.gen}}
}

// onChild applies one child event. Events of an older child of the same model are ignored.
func (e *Engine) onChild(id string, gen uint64, ev child.Event) {
	e.transact(func(now time.Time) []action {
		m := e.models[id]
		if m == nil || m.gen != gen {
			return nil
		}
		return e.childEvent(m, ev, now)
	})
}

// childEvent moves m's state machine for one event of its current child. Called with mu held.
func (e *Engine) childEvent(m *model, ev child.Event, now time.Time) []action {
	id := m.id
	switch ev.Kind {
	case child.Loading:
		m.pid, m.port, m.socket = ev.PID, ev.Port, ev.Socket
		if ev.Progress > m.progress+0.05 || ev.Progress >= 1 {
			m.progress = ev.Progress
			e.publish(Event{Kind: EventState, Model: id, State: m.state, Active: m.leases, Cause: CauseProgress, Progress: ev.Progress,
				Message: fmt.Sprintf("loading %.0f%%", ev.Progress*100)})
		}
	case child.Ready:
		m.pid, m.port, m.socket = ev.PID, ev.Port, ev.Socket
		m.base = ev.Addr.URL()
		switch m.state {
		case StateLoading:
			m.state = StateLoaded
			m.progress = 1
			m.failures = 0 // a good load: the next crash's backoff starts from the beginning
			if ev.Buffers != nil {
				ev.Buffers = e.rpcBuffers(m, ev.Buffers) // RPC0… as the engine names them
				// The child's own report of what it holds on each device replaces the
				// estimate at once; the next memory sample learns it.
				d := e.onDevices(0, ev.Buffers)
				d.RAM = 0
				m.devices = d
				m.held.GPU = d.GPU // what it allocated, KV cache included: its plan was an estimate
				e.log.Info("model ready", "model", id, "pid", ev.PID, "addr", ev.Addr, "device_buffers_mib", mibPerDevice(ev.Buffers))
			} else {
				e.log.Info("model ready", "model", id, "pid", ev.PID, "addr", ev.Addr)
			}
			e.publish(Event{Kind: EventState, Model: id, State: m.state, Active: m.leases})
			// Its waiters get their leases in this same critical section, before any eviction can
			// see it idle.
			if !e.closed {
				e.answerWaiters(m, nil, now)
			}
			e.measureSoon()
		case StateSleeping:
			m.state = StateLoaded
			e.publish(Event{Kind: EventState, Model: id, State: m.state, Active: m.leases, Cause: CauseWoke, Message: CauseWoke.message("")})
		}
	case child.Woke:
		if m.state == StateSleeping {
			m.state = StateLoaded
			e.expectWake(m)
			e.publish(Event{Kind: EventState, Model: id, State: m.state, Active: m.leases, Cause: CauseWoke, Message: CauseWoke.message("")})
		}
	case child.Sleeping:
		if m.state == StateLoaded {
			m.state = StateSleeping
			e.log.Info("model sleeping", "model", id, "pid", m.pid)
			e.publish(Event{Kind: EventState, Model: id, State: m.state, Active: m.leases})
			e.measureSoon()
		}
	case child.Exited:
		return e.exited(m, ev, now)
	}
	return nil
}

// exited handles the end of m's child. Called with mu held.
func (e *Engine) exited(m *model, ev child.Event, now time.Time) []action {
	code := ev.ExitCode
	m.exitCode = &code
	m.logTail = append([]string(nil), ev.LogTail...)
	m.child, m.pid, m.port, m.socket, m.base = nil, 0, 0, "", nil
	deliberate := ev.Deliberate || m.state == StateStopping
	var acts []action
	if lost := m.lostFor(m.gen); lost != nil {
		// A worker's link was lost: the child was stopped for it, or aborted by itself.
		e.log.Error("model failed: worker lost", "model", m.id, "pid", ev.PID, "exit_code", code, "err", lost)
		acts = e.fail(m, lost.Error(), &code, lost, now)
	} else if deliberate {
		e.log.Info("model unloaded", "model", m.id, "pid", ev.PID, "exit_code", code)
		m.state = StateUnloaded
		m.failures = 0
		m.errMsg = ""
		e.publish(Event{Kind: EventState, Model: m.id, State: m.state, Active: m.leases})
	} else {
		reason := "llama-server exited unexpectedly"
		if ev.Err != nil {
			reason = ev.Err.Error()
		}
		if m.state == StateLoading {
			reason = "load failed: " + reason
		}
		e.log.Error("model failed", "model", m.id, "pid", ev.PID, "exit_code", code, "err", ev.Err)
		acts = e.fail(m, reason, &code, ev.Err, now)
		if len(m.workers) > 0 && e.o.Workers != nil && !e.closed {
			// llama-server aborts when an RPC connection drops: was it a worker?
			acts = append(acts, action{diagnose: slices.Clone(m.workers), id: m.id, gen: m.gen})
		}
	}
	m.held, m.measured, m.devices = sched.Mem{}, sched.Mem{}, sched.Mem{}
	m.draining, m.drainCause, m.drainFor = false, "", ""
	m.keepAlive = nil
	for _, ch := range m.stopped {
		close(ch)
	}
	m.stopped = nil
	if m.removed {
		delete(e.models, m.id)
	}
	return acts
}

// fail marks m failed with a backoff before the next automatic retry and fails its waiters.
func (e *Engine) fail(m *model, reason string, code *int, cause error, now time.Time) []action {
	m.state = StateFailed
	m.errMsg = reason
	if code != nil {
		m.exitCode = new(*code)
	}
	m.failures++
	m.failedAt = now
	m.nextRetry = now.Add(backoff.Doubling(time.Second, time.Minute, m.failures-1)) // 1 s doubling, at most 60 s
	m.held, m.measured, m.devices = sched.Mem{}, sched.Mem{}, sched.Mem{}
	le := e.loadError(m)
	le.Err = cause
	if le.Err == nil {
		le.Err = errors.New(reason)
	}
	e.answerWaiters(m, le, now)
	e.publish(Event{Kind: EventState, Model: m.id, State: m.state, Active: m.leases, Cause: CauseFailed, Message: reason})
	for _, ch := range m.stopped {
		close(ch)
	}
	m.stopped = nil
	return nil
}

// mibPerDevice formats a child's per-device buffer report for the log, in MiB, devices in order.
func mibPerDevice(b map[string]int64) string {
	devs := slices.Sorted(maps.Keys(b))
	for i, d := range devs {
		devs[i] = fmt.Sprintf("%s=%d", d, b[d]>>20)
	}
	return strings.Join(devs, " ")
}
