package engine

import (
	"time"

	"github.com/llamatray/llamatray/router/child"
)

// Effects are everything the engine does to the world outside its own state: start child processes,
// signal them (through the Proc it is given back), read the clock and arm timers. The engine decides
// under its lock and spawns and signals only after releasing it, so Spawn, started and Proc.Stop may
// call back into the engine. Now, AfterFunc and Timer.Stop may be called under the lock: they must not
// block, and AfterFunc must not call f before it returns. Production uses ChildEffects; tests give a
// fake that records what was asked and lets the test deliver child events and fire timers
// synchronously.
type Effects interface {
	// Now is the engine's clock.
	Now() time.Time
	// Spawn starts a child for spec and returns at once. started is called exactly once, from any
	// goroutine and possibly before Spawn returns, with the child or why it could not start; events
	// of the child go to onEvent, serially, as child.Start delivers them.
	Spawn(spec child.Spec, onEvent func(child.Event), started func(Proc, error))
	// AfterFunc calls f once, on its own goroutine, after d (as time.AfterFunc).
	AfterFunc(d time.Duration, f func()) Timer
	// Every ticks every d until stop is called (as time.Ticker).
	Every(d time.Duration) (tick <-chan time.Time, stop func())
	// Go runs f on a goroutine of its own (tests may run it at once): work off the lock that may
	// take a while, such as checking a model's workers before its spawn.
	Go(f func())
}

// Proc is a started child as the engine sees it (*child.Child in production).
type Proc interface {
	PID() int
	// Stop asks the child to exit (force: now); it never blocks and may be called again.
	Stop(force bool)
	// Done is closed once the process is gone and its Exited event was delivered.
	Done() <-chan struct{}
	// Logs is the tail of the child's output.
	Logs() []string
}

// Timer is an armed AfterFunc.
type Timer interface {
	// Stop cancels the call if it has not started; it reports whether it did.
	Stop() bool
}

// ChildEffects are the production effects: real llama-server children (package child) and the real
// clock and timers.
type ChildEffects struct{}

// Now returns time.Now().
func (ChildEffects) Now() time.Time { return time.Now() }

// Spawn runs child.Start on its own goroutine, since starting a process takes a fork and an exec.
func (ChildEffects) Spawn(spec child.Spec, onEvent func(child.Event), started func(Proc, error)) {
	go func() {
		c, err := child.Start(spec, onEvent)
		if err != nil {
			started(nil, err)
			return
		}
		started(c, nil)
	}()
}

// Go runs f on a new goroutine.
func (ChildEffects) Go(f func()) { go f() }

// AfterFunc is time.AfterFunc.
func (ChildEffects) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// Every is a time.Ticker.
func (ChildEffects) Every(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTicker(d)
	return t.C, t.Stop
}
