package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/engine"
	"github.com/llamatray/llamatray/router/internal/safetext"
	"github.com/llamatray/llamatray/router/mem"
	"github.com/llamatray/llamatray/router/wire"
)

// openTimeout bounds opening a link (and its check) outside a load.
const openTimeout = 5 * time.Second

// Links are the head's links to its [workers.NAME] machines, held by the service. Each configured
// worker gets one End, opened when the service starts or the worker's section changes (Sync),
// reopened when a model needs it and it was down. Links is the engine's engine.Workers (Prepare,
// Down, Devices) and tells each End's lost link to lost (Engine.WorkerLost); Status is what
// /api/status shows.
type Links struct {
	log    *slog.Logger
	binary func() string                                                  // the llama-server whose --list-devices lists a worker's devices
	lost   func(name string, err error)                                   // told of each lost link (Engine.WorkerLost)
	check  func(ctx context.Context, address, token string) (Info, error) // Check; the tests' stand-in

	mu    sync.Mutex // guards links and every field of each *workerLink
	links map[string]*workerLink
}

// workerLink is one worker's End and what is known of it. Its fields are guarded by Links.mu.
type workerLink struct {
	name    string
	cfg     config.Worker
	end     *End   // nil while not open
	state   string // wire.Worker*
	lastErr string
	devices []wire.WorkerDevice
	closed  bool
	done    chan struct{} // closed with the link: its watch ends
	opening chan struct{} // closed when an open under way ends; nil when none is
}

// NewLinks makes the links, none open until Sync; binary is the llama-server whose --list-devices
// lists a worker's devices, lost is told of each lost link.
func NewLinks(log *slog.Logger, binary func() string, lost func(string, error)) *Links {
	return &Links{log: log, binary: binary, lost: lost, check: Check, links: map[string]*workerLink{}}
}

// Sync makes the links those of ws: new or changed workers get a new link (opened on its own
// goroutine), removed ones are closed. The channel is closed once the new links' opens are done
// (each bounded by openTimeout).
func (w *Links) Sync(ws map[string]config.Worker) <-chan struct{} {
	var closing []*End
	var opening []*workerLink
	w.mu.Lock()
	for name, l := range w.links {
		if c, ok := ws[name]; !ok || c != l.cfg {
			l.closed = true
			close(l.done)
			if l.end != nil {
				closing = append(closing, l.end)
			}
			delete(w.links, name)
		}
	}
	for name, c := range ws {
		if _, ok := w.links[name]; !ok {
			l := &workerLink{name: name, cfg: c, state: wire.WorkerDown, lastErr: "not checked yet", done: make(chan struct{})}
			w.links[name] = l
			opening = append(opening, l)
		}
	}
	w.mu.Unlock()
	for _, e := range closing {
		e.Close()
	}
	var wg sync.WaitGroup
	for _, l := range opening {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), openTimeout)
			defer cancel()
			if _, err := w.open(ctx, l); err != nil {
				w.log.Warn("worker not reachable", "worker", l.name, "address", l.cfg.Address, "err", err)
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	return done
}

// Close closes every link.
func (w *Links) Close() { w.Sync(nil) }

// open returns l's End, opening it first when it is not open (one open at a time per link).
func (w *Links) open(ctx context.Context, l *workerLink) (*End, error) {
	for {
		w.mu.Lock()
		if l.closed {
			w.mu.Unlock()
			return nil, fmt.Errorf("worker %s: removed from the configuration", l.name)
		}
		if l.end != nil {
			e := l.end
			w.mu.Unlock()
			return e, nil
		}
		if ch := l.opening; ch != nil {
			w.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return nil, fmt.Errorf("worker %s (%s): %w", l.name, l.cfg.Address, ctx.Err())
			}
		}
		ch := make(chan struct{})
		l.opening = ch
		w.mu.Unlock()
		return w.dial(ctx, l, ch)
	}
}

// dial opens l's End and lists its devices, then closes ch (the open under way ends). Called
// without mu, by the one open of l that made ch.
func (w *Links) dial(ctx context.Context, l *workerLink, ch chan struct{}) (*End, error) {
	e, err := Open(ctx, l.name, l.cfg.Address, l.cfg.Token, w.log)
	var devs []wire.WorkerDevice
	if err == nil {
		devs = w.listDevices(ctx, l.name, e.Addr())
	}
	w.mu.Lock()
	l.opening = nil
	close(ch)
	switch {
	case err != nil:
		w.setState(l, err)
	case l.closed:
		w.mu.Unlock()
		e.Close()
		return nil, fmt.Errorf("worker %s: removed from the configuration", l.name)
	default:
		l.end, l.devices = e, devs
		w.setState(l, nil)
		go w.watch(l, e, l.done)
	}
	w.mu.Unlock()
	if err != nil {
		return nil, err
	}
	w.log.Info("worker link open", "worker", l.name, "address", l.cfg.Address, "end", e.Addr(), "devices", len(devs))
	return e, nil
}

// watch passes each lost link of e to the engine and marks the worker down, until done is
// closed (the link is closed).
func (w *Links) watch(l *workerLink, e *End, done <-chan struct{}) {
	for {
		var err error
		select {
		case <-done:
			return
		case err = <-e.Lost():
		}
		w.mu.Lock()
		current := l.end == e
		if current {
			w.setState(l, err)
		}
		w.mu.Unlock()
		if current && w.lost != nil {
			w.lost(l.name, err)
		}
	}
}

// setState records what the last open, check or link of l said (nil: up). Called with mu held.
func (w *Links) setState(l *workerLink, err error) {
	l.state, l.lastErr = stateOf(err), ""
	if err != nil {
		l.lastErr = err.Error()
	}
}

func stateOf(err error) string {
	switch {
	case err == nil:
		return wire.WorkerUp
	case errors.Is(err, ErrBadToken), errors.Is(err, ErrNotWorker):
		return wire.WorkerRefused
	case errors.Is(err, ErrBusy):
		return wire.WorkerBusy
	}
	return wire.WorkerDown
}

// Prepare is engine.Workers': each named worker is opened if it is not, and checked (down, a
// refused token, another head's session: an error naming it); the local ends are returned in order.
func (w *Links) Prepare(ctx context.Context, names []string) ([]string, error) {
	ends := make([]string, 0, len(names))
	for _, name := range names {
		w.mu.Lock()
		l := w.links[name]
		w.mu.Unlock()
		if l == nil {
			return nil, &engine.WorkerError{Worker: name, Err: fmt.Errorf("worker %s: not configured", name)}
		}
		e, err := w.open(ctx, l)
		if err != nil {
			return nil, &engine.WorkerError{Worker: name, Err: err}
		}
		info, err := w.checkSettled(ctx, l)
		if err == nil && info.Busy {
			err = fmt.Errorf("%w with %s", ErrBusy, info.BusyWith)
		}
		if err != nil {
			err = named(l, err)
		}
		w.mu.Lock()
		if l.end == e {
			w.setState(l, err)
		}
		w.mu.Unlock()
		if err != nil {
			return nil, &engine.WorkerError{Worker: name, Err: err}
		}
		ends = append(ends, e.Addr())
	}
	return ends, nil
}

// busySettle is how long a check waits out a session that is still open: the link of a child that
// just exited (a model stopped for this load) reaches the worker's end a moment later.
const busySettle = 2 * time.Second

// checkSettled checks l, again every 100 ms while it is busy, up to busySettle (the worker is
// another process: there is nothing to wait on but its answer).
func (w *Links) checkSettled(ctx context.Context, l *workerLink) (Info, error) {
	deadline := time.Now().Add(busySettle)
	for {
		info, err := w.check(ctx, l.cfg.Address, l.cfg.Token)
		if err != nil || !info.Busy || time.Now().After(deadline) {
			return info, err
		}
		select {
		case <-ctx.Done():
			return info, err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Down is engine.Workers': the first named worker that does not answer or refuses (busy is an
// answer: the model's own child may hold it), as an *engine.WorkerError.
func (w *Links) Down(ctx context.Context, names []string) error {
	for _, name := range names {
		w.mu.Lock()
		l := w.links[name]
		w.mu.Unlock()
		if l == nil {
			continue
		}
		_, err := Check(ctx, l.cfg.Address, l.cfg.Token)
		if err == nil || errors.Is(err, ErrBusy) {
			continue
		}
		err = named(l, err)
		w.mu.Lock()
		w.setState(l, err)
		w.mu.Unlock()
		return &engine.WorkerError{Worker: name, Err: err}
	}
	return nil
}

// Devices is engine.Workers': every worker's RPC devices as listed when its link opened. It takes
// only w.mu, never the engine's lock, and does no I/O.
func (w *Links) Devices() []engine.WorkerDevice {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []engine.WorkerDevice
	for _, l := range w.links {
		for _, d := range l.devices {
			out = append(out, engine.WorkerDevice{Worker: l.name, Name: d.Name, Total: d.Total, Free: d.Free})
		}
	}
	return out
}

// named is err of a check of l, "ADDRESS: why" from Check, as "worker NAME (ADDRESS): why".
func named(l *workerLink, err error) error {
	if inner := errors.Unwrap(err); inner != nil && strings.HasPrefix(err.Error(), l.cfg.Address+": ") {
		err = inner
	}
	return fmt.Errorf("worker %s (%s): %w", l.name, l.cfg.Address, err)
}

// listDevices asks llama-server which RPC devices it reaches through end; nil when it cannot say.
func (w *Links) listDevices(ctx context.Context, name, end string) []wire.WorkerDevice {
	bin := w.binary()
	if bin == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	b, err := exec.CommandContext(ctx, bin, "--rpc", end, "--list-devices").CombinedOutput()
	if err != nil {
		w.log.Warn("worker devices not listed", "worker", name, "end", end, "err", err)
		return nil
	}
	return workerDevices(mem.ParseListDevices(b), end)
}

// maxWorkerDevice bounds the memory a worker's device may claim (1 PiB): the worker's rpc-server
// tells it, and a lie would make the scheduler plan on memory that is not there.
const maxWorkerDevice = 1 << 50

// workerDevices are the RPC devices reached through end, of a --list-devices listing. What the
// worker told is checked: a device claiming more free memory than it has, or more than
// maxWorkerDevice, is left out; the description (shown in /api/status and the window) cleaned.
func workerDevices(ds []mem.Device, end string) []wire.WorkerDevice {
	var out []wire.WorkerDevice
	for _, d := range ds {
		if !strings.HasPrefix(d.Name, "RPC") && !strings.Contains(d.Description, end) {
			continue
		}
		if d.Total <= 0 || d.Total > maxWorkerDevice || d.Free < 0 || d.Free > d.Total {
			continue
		}
		out = append(out, wire.WorkerDevice{Name: safetext.Clean(d.Name, 64), Description: safetext.Clean(d.Description, 200), Total: d.Total, Free: d.Free})
	}
	return out
}

// Status is every worker as /api/status shows it, by name; models are the engine's, for the
// model using each worker.
func (w *Links) Status(models []engine.ModelStatus) []wire.WorkerStatus {
	w.mu.Lock()
	out := make([]wire.WorkerStatus, 0, len(w.links))
	for _, l := range w.links {
		st := wire.WorkerStatus{Name: l.name, Address: l.cfg.Address, State: l.state, LastError: l.lastErr,
			Devices: append([]wire.WorkerDevice{}, l.devices...)}
		if l.end != nil {
			st.End = l.end.Addr()
		}
		out = append(out, st)
	}
	w.mu.Unlock()
	slices.SortFunc(out, func(a, b wire.WorkerStatus) int { return strings.Compare(a.Name, b.Name) })
	for i := range out {
		for _, m := range models {
			if m.State.Running() && slices.Contains(m.Workers, out[i].Name) {
				out[i].Model = m.ID
			}
		}
	}
	return out
}
