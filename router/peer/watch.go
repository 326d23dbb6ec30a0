package peer

// The watch on one request to a peer: whenever the peer has been silent for the watch's poke —
// before its answer begins, or midway through it — its list is read again, and a failed read while
// it is still silent ends the request (ErrDown). A peer that pauses (a long prompt) but still
// answers its list reads is left alone: there is no idle deadline.

import (
	"cmp"
	"context"
	"errors"
	"io"
	"sync/atomic"
	"time"
)

// Poke is how long a request waits for a peer's answer to begin, or for its next bytes midway,
// before the peer's list is read again, when a Watch is given none: when that read fails too, the
// request ends (ErrDown), so a peer that stopped answering fails a request within Poke + the read's
// timeout rather than never.
const Poke = 3 * time.Second

// ErrDown ends a request whose peer stopped answering while it waited.
var ErrDown = errors.New("the peer stopped answering (its model list could not be read either)")

// Watch is one request's watch; its goroutine runs until End or the request's end.
type Watch struct {
	ps      *Set
	name    string
	poke    time.Duration
	cancel  context.CancelCauseFunc
	last    atomic.Int64  // unix nanoseconds of the request's start or of the last bytes the peer sent
	started atomic.Bool   // the peer's answer began (its headers came)
	stop    chan struct{} // closed by end
	done    chan struct{} // closed when the goroutine has returned
}

// WatchRequest starts the watch of a request to p whose context cancel ends (with ErrDown), reading
// p's list again after every poke of silence (0: Poke); call End when done.
func (s *Set) WatchRequest(ctx context.Context, cancel context.CancelCauseFunc, p Info, poke time.Duration) *Watch {
	pw := &Watch{ps: s, name: p.Name, poke: cmp.Or(poke, Poke), cancel: cancel, stop: make(chan struct{}), done: make(chan struct{})}
	pw.touch()
	go pw.run(ctx, s.Failed(p.Name))
	return pw
}

// End stops the watch and waits for its goroutine.
func (pw *Watch) End() {
	close(pw.stop)
	<-pw.done
}

func (pw *Watch) touch() { pw.last.Store(time.Now().UnixNano()) }

func (pw *Watch) silent() time.Duration { return time.Since(time.Unix(0, pw.last.Load())) }

func (pw *Watch) run(ctx context.Context, failed <-chan struct{}) {
	defer close(pw.done)
	t := time.NewTimer(pw.poke)
	defer t.Stop()
	for {
		select {
		case <-pw.stop:
			return
		case <-ctx.Done():
			return
		case <-t.C:
			if s := pw.silent(); s < pw.poke {
				t.Reset(pw.poke - s)
				continue
			}
			pw.ps.Poke(pw.name)
			t.Reset(pw.poke)
		case <-failed:
			// Before the answer began any failed read ends the wait; midway, only one while the
			// stream is silent (bytes since then say the peer is there).
			if !pw.started.Load() || pw.silent() >= pw.poke {
				pw.cancel(ErrDown)
				return
			}
			failed = pw.ps.Failed(pw.name)
		}
	}
}

// Body is the peer's answer, each read of which says the peer is there.
func (pw *Watch) Body(r io.Reader) io.Reader {
	pw.started.Store(true)
	pw.touch()
	return watchedReader{r, pw}
}

type watchedReader struct {
	r  io.Reader
	pw *Watch
}

func (w watchedReader) Read(p []byte) (int, error) {
	n, err := w.r.Read(p)
	if n > 0 {
		w.pw.touch()
	}
	return n, err
}
