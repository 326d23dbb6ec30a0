package engine

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"
)

// State is the lifecycle state of one model.
type State string

// The model states. unloaded → loading → loaded ⇄ sleeping → stopping → unloaded, plus failed.
const (
	StateUnloaded State = "unloaded"
	StateLoading  State = "loading"
	StateLoaded   State = "loaded"
	StateSleeping State = "sleeping"
	StateStopping State = "stopping"
	StateFailed   State = "failed"
)

// Running reports whether a child process exists in this state.
func (s State) Running() bool {
	return s == StateLoading || s == StateLoaded || s == StateSleeping || s == StateStopping
}

// ModelStatus is a snapshot of one model, safe to keep and read after the call.
type ModelStatus struct {
	ID            string
	Aliases       []string
	State         State
	Active        int       // leases held by in-flight requests
	Queued        int       // requests waiting for this model
	Draining      bool      // refuses new leases; stops when Active reaches 0
	Pinned        bool      // never evicted by pressure or timers
	MemoryBytes   int64     // what the child holds now (measured RSS), 0 when not running
	EstimateBytes int64     // what a load needs: learned footprint if known, else the estimate
	LearnedBytes  int64     // measured footprint of an earlier load, 0 if never measured
	LastUsed      time.Time // last lease taken or released
	PID           int
	Port          int       // TCP port of the child (Windows); 0 on a unix socket
	Socket        string    // unix socket path of the child (Linux, macOS)
	ExitCode      *int      // exit code of the last child, when it ended
	Error         string    // why the model is failed
	NextRetry     time.Time // failed: when the next load may start
	Progress      float64   // loading: 0..1 when the child reports it
	UnloadAt      time.Time // idle unload due at, zero if none
	Args          []string  // the child's command line
	Path          string
	Binary        string // the llama-server the running child was started from, "" when none runs
}

// Event is one change of a model's state or lease count.
type Event struct {
	Seq     uint64
	Time    time.Time
	Model   string
	Kind    string // "state", "lease", "catalog", "pressure", "resync"
	State   State
	Active  int
	Message string
}

// Budget describes the memory Llamatray may use for models.
type Budget struct {
	Limit           int64 // configured limit, or derived from the machine
	Configured      bool  // Limit came from the configuration
	Reserve         int64
	Used            int64 // reserved by models: what each holds, or what its run was planned with when that is more
	Measured        int64 // what models really hold now (measured RSS and VRAM)
	ConfiguredLimit int64 // memory_limit as configured, 0 = automatic
	Free            int64 // Limit - Used, never below 0
	SystemTotal     int64
	SystemAvailable int64
	MaxLoaded       int
	Loaded          int
}

// Lease is one in-flight request's hold on a running model. Release it exactly once; extra calls are no-ops.
type Lease struct {
	Model   string
	URL     *url.URL      // base URL of the child (child.Addr.URL)
	Socket  string        // the child's unix socket, which the URL's connections must dial; "" on TCP
	Waited  time.Duration // time spent queued or loading
	release func()
}

// Release gives the lease back. It is safe to call more than once.
func (l *Lease) Release() {
	if l != nil && l.release != nil {
		l.release()
	}
}

// ErrClosed is returned once the engine is shutting down.
var ErrClosed = errors.New("llamatray is shutting down")

// UnknownModelError says no catalog entry or alias has this name.
type UnknownModelError struct {
	Name        string
	Suggestions []string
}

func (e *UnknownModelError) Error() string {
	msg := fmt.Sprintf("model %q not found", e.Name)
	if len(e.Suggestions) > 0 {
		msg += "; did you mean " + strings.Join(e.Suggestions, ", ") + "?"
	}
	return msg
}

// QueueTimeoutError says a request waited its whole deadline for memory or a slot.
type QueueTimeoutError struct {
	Model      string
	Waited     time.Duration
	RetryAfter time.Duration
}

func (e *QueueTimeoutError) Error() string {
	return fmt.Sprintf("model %q: no memory or slot became free within %s (every loaded model is busy)", e.Model, e.Waited.Round(time.Millisecond))
}

// LoadError says a model's child failed to load or crashed.
type LoadError struct {
	Model    string
	ExitCode *int
	Reason   string
	LogTail  []string
	RetryAt  time.Time
	Err      error
}

func (e *LoadError) Error() string {
	msg := fmt.Sprintf("model %q failed to load: %s", e.Model, e.Reason)
	if e.ExitCode != nil {
		msg += fmt.Sprintf(" (exit code %d)", *e.ExitCode)
	}
	return msg
}

func (e *LoadError) Unwrap() error { return e.Err }

// TooLargeError says a model cannot fit even with every other model unloaded.
type TooLargeError struct {
	Model  string
	Need   int64
	Budget int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("model %q needs %d MiB but the memory budget is %d MiB even with every other model unloaded (raise memory_limit or lower memory_reserve to try anyway)", e.Model, e.Need>>20, e.Budget>>20)
}

// NoServerError says no llama-server binary was found.
type NoServerError struct{ Hint string }

func (e *NoServerError) Error() string {
	return "llama-server not found: " + e.Hint
}

// NewLease builds a lease whose Release calls release at most once. The engine's own leases come
// from Acquire; this is for HTTP-layer tests and alternative engines.
func NewLease(model string, u *url.URL, waited time.Duration, release func()) *Lease {
	var once sync.Once
	return &Lease{Model: model, URL: u, Waited: waited, release: func() {
		if release != nil {
			once.Do(release)
		}
	}}
}
