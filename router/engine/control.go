package engine

import (
	"context"
	"fmt"
	"time"
)

// Load loads the named model and waits until it is ready or failed. It clears a crash backoff.
func (e *Engine) Load(ctx context.Context, name string) error {
	id, err := e.Resolve(name)
	if err != nil {
		return err
	}
	e.transact(func(time.Time) []action {
		if m := e.models[id]; m != nil && m.state == StateFailed {
			m.nextRetry = time.Time{}
		}
		return nil
	})
	l, err := e.Acquire(ctx, id)
	if err != nil {
		return err
	}
	l.Release()
	return nil
}

// StartLoad starts loading the named model in the background and returns at once.
func (e *Engine) StartLoad(name string) error {
	id, err := e.Resolve(name)
	if err != nil {
		return err
	}
	go func() {
		if err := e.Load(context.Background(), id); err != nil {
			e.log.Warn("background load failed", "model", id, "err", err)
		}
	}()
	return nil
}

// Unload stops the named model. Without force it drains: new requests wait, in-flight ones finish,
// then the child stops. With force the child is stopped at once. It waits until the child is gone or
// ctx ends.
func (e *Engine) Unload(ctx context.Context, name string, force bool) error {
	id, err := e.Resolve(name)
	if err != nil {
		return err
	}
	var done chan struct{}
	e.transact(func(time.Time) []action {
		m := e.models[id]
		if m == nil || !m.state.Running() {
			return nil
		}
		done = make(chan struct{})
		m.stopped = append(m.stopped, done)
		if force {
			return e.stopModel(m, true, CauseForced, "")
		}
		e.setDraining(m, CauseAsked, "")
		return nil
	})
	if done == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("unloading %q: %w", id, ctx.Err())
	}
}

// SetPinned pins or unpins a model for this run (the configuration file is the caller's).
func (e *Engine) SetPinned(name string, pinned bool) error {
	id, err := e.Resolve(name)
	if err != nil {
		return err
	}
	e.transact(func(time.Time) []action {
		if m := e.models[id]; m != nil {
			m.pinned, m.pinSet = pinned, true
			e.publish(Event{Kind: EventState, Model: id, State: m.state, Active: m.leases, Cause: CausePinned, Pinned: pinned, Message: fmt.Sprintf("pinned=%v", pinned)})
		}
		return nil
	})
	return nil
}

// KeepAlive sets how long model name stays loaded once idle, for its current child only (Ollama's
// keep_alive): negative keeps it until it is unloaded or evicted for room, 0 unloads it as soon as
// no request holds it; nil goes back to the configured idle timer. Memory pressure still evicts it.
func (e *Engine) KeepAlive(name string, d *time.Duration) error {
	id, err := e.Resolve(name)
	if err != nil {
		return err
	}
	e.transact(func(time.Time) []action {
		if m := e.models[id]; m != nil {
			m.keepAlive = nil
			if d != nil {
				m.keepAlive = new(*d)
			}
		}
		return nil
	})
	return nil
}
