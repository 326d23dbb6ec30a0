// Package child runs one llama-server child process per model (Child), and every other child
// process of Llamatray, a worker's rpc-server, the same way (Process).
//
// Each child has exactly one supervisor goroutine. It owns the exec.Cmd from
// fork to reap: it starts the process, watches its readiness (stdout state
// lines and /health polling, first to say ready wins), enforces the load
// timeout, notices sleep and wake, acts on Stop requests, and always reaps the
// process. Everything it learns is reported through the onEvent callback given
// to Start, serially and in order, from that goroutine.
//
// Children die with the parent:
//   - Linux: each child is its own process group with Pdeathsig=SIGKILL. The
//     death signal fires when the OS thread that forked the child exits, so the
//     supervisor goroutine locks its OS thread before forking and keeps it until
//     the child is reaped.
//   - Windows: each child is assigned to a Job Object with
//     JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE; the job handle closes when this process
//     dies, killing the child.
//   - Everywhere: the child's stdin pipe stays open for its whole life, and
//     llama-server exits when it reads EOF there (its orphan guard).
//
// What remains on macOS and other unix systems, which have no death signal: a
// child whose parent was SIGKILLed exits when it reads stdin EOF, which it only
// does after loading; a child still loading when the parent is killed finishes
// loading first, then exits.
package child

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults applied by Start to zero Spec fields.
const (
	DefaultLoadTimeout    = 5 * time.Minute
	DefaultStopTimeout    = 10 * time.Second
	DefaultHealthInterval = 50 * time.Millisecond
	DefaultLogLines       = 200
	// LogTailLines is how many output lines an Exited event carries.
	LogTailLines = 50
	// MaxBindRetries is how many times a child that could not bind its address is
	// restarted on a new one before Exited reports the failure.
	MaxBindRetries = 3
	// PropsInterval is how often /props is polled for is_sleeping while a child
	// that never printed state lines is ready or sleeping.
	PropsInterval = 2 * time.Second
)

// Protocol lines shared with llama-server's router mode.
const (
	// StatePrefix starts every state line the child prints on stdout.
	StatePrefix = "cmd_child_to_router:state:"
	// ExitCommand, followed by a newline on stdin, asks the child to exit.
	ExitCommand = "cmd_router_to_child:exit"
	// RouterPortEnv marks the process as a router child; its value is the router's port.
	RouterPortEnv = "LLAMA_SERVER_ROUTER_PORT"
)

// Errors carried by Exited events, wrapped with details; test with errors.Is.
var (
	ErrLoadTimeout = errors.New("llama-server showed no progress within the load timeout")
	ErrBind        = errors.New("llama-server could not bind its port")
	ErrLoadFailed  = errors.New("llama-server exited while loading")
	ErrCrashed     = errors.New("llama-server exited unexpectedly")
	ErrStart       = errors.New("could not start llama-server")
)

// Spec describes one child process.
type Spec struct {
	Model          string        // model ID, for logs
	Binary         string        // path of llama-server
	Args           []string      // llama-server args without --host/--port (Start adds them)
	Env            []string      // extra env appended to os.Environ(); Start adds LLAMA_SERVER_ROUTER_PORT
	RouterPort     int           // value for LLAMA_SERVER_ROUTER_PORT (0 → 1)
	Addrs          Addrs         // where children listen; nil → a package-wide one (sockets; Windows: ports)
	LoadTimeout    time.Duration // default 5m; measured from the last output, so progress extends it
	StopTimeout    time.Duration // default 10s: graceful stop, then SIGKILL of the process group
	HealthInterval time.Duration // default 50ms: /health polling while loading
	LogLines       int           // ring buffer of output lines, default 200
	Logger         *slog.Logger  // nil → slog.Default()
}

// withDefaults validates s and fills its zero fields.
func (s Spec) withDefaults() (Spec, error) {
	if s.Binary == "" {
		return s, fmt.Errorf("child %q: %w: no llama-server binary given", s.Model, ErrStart)
	}
	for _, a := range s.Args {
		name, _, _ := strings.Cut(a, "=")
		if name == "--host" || name == "--port" {
			return s, fmt.Errorf("child %q: %w: argument %q is chosen by Start and must not be given", s.Model, ErrStart, a)
		}
	}
	s.RouterPort = cmp.Or(s.RouterPort, 1)
	if s.RouterPort < 0 || s.RouterPort > 65535 {
		return s, fmt.Errorf("child %q: %w: router port %d out of range", s.Model, ErrStart, s.RouterPort)
	}
	s.Addrs = cmp.Or[Addrs](s.Addrs, defaultAddrs)
	if s.LoadTimeout <= 0 {
		s.LoadTimeout = DefaultLoadTimeout
	}
	if s.StopTimeout <= 0 {
		s.StopTimeout = DefaultStopTimeout
	}
	if s.HealthInterval <= 0 {
		s.HealthInterval = DefaultHealthInterval
	}
	if s.LogLines <= 0 {
		s.LogLines = DefaultLogLines
	}
	s.Logger = cmp.Or(s.Logger, slog.Default())
	s.Args = append([]string(nil), s.Args...)
	s.Env = append([]string(nil), s.Env...)
	return s, nil
}

// EventKind says what happened to a child.
type EventKind int

// The event kinds, in the order a child normally goes through them.
const (
	Loading  EventKind = iota + 1 // the process started (again, with a new PID and Addr, after a bind failure) or reported load progress
	Ready                         // the model is loaded and serving
	Sleeping                      // the child freed its weights after being idle
	Woke                          // a sleeping child reloaded its weights
	Exited                        // the process is gone and reaped; always the last event
)

var kindNames = [...]string{Loading: "loading", Ready: "ready", Sleeping: "sleeping", Woke: "woke", Exited: "exited"}

// String returns the lower-case name of k.
func (k EventKind) String() string {
	if k > 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "EventKind(" + strconv.Itoa(int(k)) + ")"
}

// Event is one change of a child process.
type Event struct {
	Kind       EventKind
	PID        int
	Addr                // where the process listens
	Progress   float64  // Loading: 0..1 when known
	ExitCode   int      // Exited: process exit code, -1 if killed by a signal
	Deliberate bool     // Exited after Stop()
	Err        error    // Exited: why, nil after Stop (see the Err* values)
	LogTail    []string // Exited: last LogTailLines output lines
	// Ready: bytes per device (HostDevice: RAM) from the child's own report of the buffers it
	// allocated (model, KV, compute, ...), as far as it printed one before it was ready; nil
	// when it printed none (llama-server prints them at the verbosity of informational lines).
	Buffers map[string]int64
}

// Child is a running llama-server process and its supervisor.
type Child struct {
	spec    Spec
	onEvent func(Event)
	log     *slog.Logger
	ring    *ring
	client  *http.Client

	mu   sync.Mutex // guards pid, addr and args, which change when a bind failure forces a restart
	pid  int
	addr Addr
	args []string

	stopLevel atomic.Int32  // stopNone, stopGraceful or stopForce; only ever raised
	kick      chan struct{} // capacity 1: tells the supervisor stopLevel changed
	done      chan struct{} // closed after the process is reaped and Exited delivered
}

const (
	stopNone int32 = iota
	stopGraceful
	stopForce
)

// Start spawns the child and returns once the process has started; it is not
// ready yet. onEvent is called from the child's single supervisor goroutine,
// serially and in order; it may be called before Start returns (every event
// carries PID and Addr). Exited is delivered exactly once and last. After Stop
// returns no event other than Exited begins. If Start returns an error,
// onEvent is never called.
func Start(spec Spec, onEvent func(Event)) (*Child, error) {
	spec, err := spec.withDefaults()
	if err != nil {
		return nil, err
	}
	if onEvent == nil {
		onEvent = func(Event) {}
	}
	c := &Child{
		spec:    spec,
		onEvent: onEvent,
		log:     spec.Logger.With("model", spec.Model),
		ring:    newRing(spec.LogLines),
		client:  newProbeClient(),
		kick:    make(chan struct{}, 1),
		done:    make(chan struct{}),
	}
	started := make(chan error, 1)
	go c.supervise(started)
	if err := <-started; err != nil {
		return nil, err
	}
	return c, nil
}

// PID returns the process ID of the current process.
func (c *Child) PID() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pid
}

// Stop asks the child to exit. It does not block and may be called any number
// of times. Graceful: the exit command is written to the child's stdin; a
// child that is still loading or never printed state lines (so does not read
// stdin) also gets SIGTERM on its process group (Windows: a loading child is
// terminated at once); if the child is still alive after StopTimeout it is
// killed. force: killed now (SIGKILL of the process group; TerminateProcess on
// Windows). A forced Stop after a graceful one escalates. Wait on Done for the
// exit.
func (c *Child) Stop(force bool) {
	level := stopGraceful
	if force {
		level = stopForce
	}
	for {
		cur := c.stopLevel.Load()
		if cur >= level {
			return
		}
		if c.stopLevel.CompareAndSwap(cur, level) {
			break
		}
	}
	select {
	case c.kick <- struct{}{}:
	default: // a kick is already pending; the supervisor reads the latest level
	}
}

// Done is closed after the process is reaped and Exited delivered.
func (c *Child) Done() <-chan struct{} { return c.done }

// Logs returns a copy of the recent output lines (stdout and stderr merged,
// state lines left out), oldest first.
func (c *Child) Logs() []string { return c.ring.snapshot() }

// emit delivers a non-final event unless a Stop has been requested.
func (c *Child) emit(ev Event) {
	if c.stopLevel.Load() != stopNone {
		return
	}
	c.onEvent(ev)
}
