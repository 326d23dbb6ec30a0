package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/llamatray/llamatray/router/child"
)

// Workers: a model whose settings name workers ([models."ID"] workers) is spread over other
// machines' devices through llama.cpp's RPC backend. Each worker serves one model at a time, which
// sched.Plan decides (5.6) from the workers of every model (sched.Model.Workers). Before its child
// is spawned, every worker of the model is checked (Workers.Prepare, bounded by
// workerCheckTimeout): one that is down, refuses the token or is busy fails the load at once with
// an error naming it, and the model is failed with the usual backoff. The child gets --rpc with
// the local end of each worker's link. A link lost while the child runs (WorkerLost) stops the
// child at once: its requests in flight end (the proxy reads Lease.Lost to name the worker), its
// queued ones fail with the worker's error, and the model is failed with backoff; other models
// keep serving.

// workerCheckTimeout bounds the check of a model's workers before its child is spawned.
const workerCheckTimeout = 5 * time.Second

// Workers are the head's links to its workers (the service's, over package worker).
type Workers interface {
	// Prepare checks each named worker (bounded by ctx) and returns the local end of its link,
	// host:port, in the order given: what the child's --rpc gets. An error names the worker
	// (*WorkerError).
	Prepare(ctx context.Context, names []string) ([]string, error)
	// Down is the first named worker that does not answer, or refuses (its being busy is no
	// refusal here: the model's own child may be what keeps it busy), as a *WorkerError; nil when
	// every one answers. ctx bounds it.
	Down(ctx context.Context, names []string) error
	// Devices are every configured worker's RPC devices, as last listed (rpcdevices.go). It must
	// not block: the engine calls it under its lock.
	Devices() []WorkerDevice
}

// WorkerError says a model cannot use one of its workers: it is down, refused the token, is busy
// with another head, or its link was lost.
type WorkerError struct {
	Worker string
	Err    error
}

func (e *WorkerError) Error() string {
	if e.Err == nil {
		return "worker " + e.Worker + " failed"
	}
	if msg := e.Err.Error(); strings.HasPrefix(msg, "worker "+e.Worker) {
		return msg
	}
	return fmt.Sprintf("worker %s: %v", e.Worker, e.Err)
}

func (e *WorkerError) Unwrap() error { return e.Err }

// ErrNoWorkers is the error of a load of a model with workers when the engine has no links.
var ErrNoWorkers = errors.New("no worker links in this engine")

// prepareAndSpawn checks a's workers and spawns its child with --rpc, or fails the load with the
// worker's error. Runs on its own goroutine (Effects.Go); a's start is counted in e.spawn.
func (e *Engine) prepareAndSpawn(a action) {
	var ends []string
	err := ErrNoWorkers
	if e.o.Workers != nil {
		ctx, cancel := context.WithTimeout(context.Background(), workerCheckTimeout)
		ends, err = e.o.Workers.Prepare(ctx, a.workers)
		cancel()
	}
	if err == nil && len(ends) != len(a.workers) {
		err = fmt.Errorf("%d worker links for %d workers", len(ends), len(a.workers))
	}
	if err != nil {
		var we *WorkerError
		if !errors.As(err, &we) {
			err = &WorkerError{Worker: strings.Join(a.workers, ","), Err: err}
		}
		e.spawned(a.id, a.gen, nil, err)
		e.spawn.Done()
		return
	}
	rpc := []string{"--rpc", strings.Join(ends, ",")}
	e.mu.Lock()
	if m := e.models[a.id]; m != nil && m.gen == a.gen {
		m.rpc = rpc
	}
	e.mu.Unlock()
	spec := *a.start
	spec.Args = append(slices.Clone(spec.Args), rpc...)
	e.log.Info("workers checked", "model", a.id, "workers", a.workers, "rpc", ends)
	e.spawnChild(a.id, a.gen, spec)
}

// spawnChild hands spec to the effects; its start is counted in e.spawn.
func (e *Engine) spawnChild(id string, gen uint64, spec child.Spec) {
	e.fx.Spawn(spec,
		func(ev child.Event) { e.onChild(id, gen, ev) },
		func(p Proc, err error) {
			defer e.spawn.Done()
			e.spawned(id, gen, p, err)
		})
}

// WorkerLost tells the engine that the link to worker name was lost (err names it): every model
// whose child uses it is stopped at once and failed with err once its child is gone; a model that
// already failed on its own (the child aborted when its RPC connection dropped) is said to have
// failed for err.
func (e *Engine) WorkerLost(name string, err error) {
	we := &WorkerError{Worker: name, Err: err}
	e.transact(func(now time.Time) []action {
		var acts []action
		for _, m := range e.models {
			if !slices.Contains(m.workers, name) {
				continue
			}
			switch {
			case m.state.Running() && m.lost == nil:
				e.log.Error("worker lost: stopping its model", "model", m.id, "pid", m.pid, "worker", name, "err", err)
				m.lost, m.lostGen = we, m.gen
				acts = append(acts, e.stopModel(m, true, CauseFailed, "")...)
			case m.state == StateFailed && m.lost == nil && now.Sub(m.failedAt) < 15*time.Second:
				m.lost, m.lostGen = we, m.gen
				m.errMsg = we.Error() + " (" + m.errMsg + ")"
			}
		}
		return acts
	})
}

// diagnose asks whether one of the workers of m's child (generation gen) is down, when that child
// failed or a request to it broke; if one is, WorkerLost is told, and its error returned. Runs off
// the lock, bounded by workerCheckTimeout.
func (e *Engine) diagnose(id string, gen uint64, workers []string) error {
	e.mu.Lock()
	m := e.models[id]
	var lost error
	if m != nil {
		lost = m.lostFor(gen)
	}
	e.mu.Unlock()
	if lost != nil || m == nil || len(workers) == 0 || e.o.Workers == nil {
		return lost
	}
	ctx, cancel := context.WithTimeout(context.Background(), workerCheckTimeout)
	err := e.o.Workers.Down(ctx, workers)
	cancel()
	var we *WorkerError
	if !errors.As(err, &we) {
		return nil
	}
	e.WorkerLost(we.Worker, we.Err)
	e.mu.Lock()
	defer e.mu.Unlock()
	if l := m.lostFor(gen); l != nil {
		return l
	}
	return we
}

// lostFor is why the child of generation gen of m went away when a worker's link was lost; nil
// otherwise. Called with mu held.
func (m *model) lostFor(gen uint64) error {
	if m.lost != nil && m.lostGen == gen {
		return m.lost
	}
	return nil
}
