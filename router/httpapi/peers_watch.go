package httpapi

// The watch on one request to a peer: whenever the peer has been silent for peerHeaderPoke —
// before its answer begins, or midway through it — its list is read again, and a failed read while
// it is still silent ends the request (errPeerDown). A peer that pauses (a long prompt) but still
// answers its list reads is left alone: there is no idle deadline.

import (
	"context"
	"io"
	"sync/atomic"
	"time"

	"github.com/llamatray/llamatray/router/peer"
)

// peerWatch is one request's watch; its goroutine runs until end or the request's end.
type peerWatch struct {
	ps      *peer.Set
	name    string
	cancel  context.CancelCauseFunc
	last    atomic.Int64  // unix nanoseconds of the request's start or of the last bytes the peer sent
	started atomic.Bool   // the peer's answer began (its headers came)
	stop    chan struct{} // closed by end
	done    chan struct{} // closed when the goroutine has returned
}

// watchPeer starts the watch of a request to p whose context cancel ends; call end when done.
func watchPeer(ctx context.Context, cancel context.CancelCauseFunc, ps *peer.Set, p peer.Info) *peerWatch {
	pw := &peerWatch{ps: ps, name: p.Name, cancel: cancel, stop: make(chan struct{}), done: make(chan struct{})}
	pw.touch()
	go pw.run(ctx, ps.Failed(p.Name))
	return pw
}

// end stops the watch and waits for its goroutine.
func (pw *peerWatch) end() {
	close(pw.stop)
	<-pw.done
}

func (pw *peerWatch) touch() { pw.last.Store(time.Now().UnixNano()) }

func (pw *peerWatch) silent() time.Duration { return time.Since(time.Unix(0, pw.last.Load())) }

func (pw *peerWatch) run(ctx context.Context, failed <-chan struct{}) {
	defer close(pw.done)
	t := time.NewTimer(peerHeaderPoke)
	defer t.Stop()
	for {
		select {
		case <-pw.stop:
			return
		case <-ctx.Done():
			return
		case <-t.C:
			if s := pw.silent(); s < peerHeaderPoke {
				t.Reset(peerHeaderPoke - s)
				continue
			}
			pw.ps.Poke(pw.name)
			t.Reset(peerHeaderPoke)
		case <-failed:
			// Before the answer began any failed read ends the wait; midway, only one while the
			// stream is silent (bytes since then say the peer is there).
			if !pw.started.Load() || pw.silent() >= peerHeaderPoke {
				pw.cancel(errPeerDown)
				return
			}
			failed = pw.ps.Failed(pw.name)
		}
	}
}

// body is the peer's answer, each read of which says the peer is there.
func (pw *peerWatch) body(r io.Reader) io.Reader {
	pw.started.Store(true)
	pw.touch()
	return watchedReader{r, pw}
}

type watchedReader struct {
	r  io.Reader
	pw *peerWatch
}

func (w watchedReader) Read(p []byte) (int, error) {
	n, err := w.r.Read(p)
	if n > 0 {
		w.pw.touch()
	}
	return n, err
}
