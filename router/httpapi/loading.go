package httpapi

import (
	"fmt"
	"net/http"
	"time"

	"github.com/llamatray/llamatray/router/engine"
	"github.com/llamatray/llamatray/router/proxy"
	"github.com/llamatray/llamatray/router/view"
)

// tryAcquirer is an Engine that can say at once whether a request gets its answer without waiting
// (engine.Engine.TryAcquireID).
type tryAcquirer interface {
	TryAcquireID(id string) (lease *engine.Lease, answered bool, err error)
}

// acquire takes a lease on model id. A streaming request whose model is not ready within
// loadingAfter, with StreamLoadingProgress on, gets 200 and SSE headers at once and a comment line
// every loadingEvery until the lease arrives; early then reports that headers were sent.
// Acquire is bound to the client's context, so a client that leaves ends the wait.
func (srv *Server) acquire(w http.ResponseWriter, r *http.Request, id string, stream bool) (lease *engine.Lease, early bool, err error) {
	ctx := r.Context()
	if !stream || !srv.o.StreamLoadingProgress {
		lease, err = srv.o.Engine.AcquireID(ctx, id)
		return lease, false, err
	}
	if ta, ok := srv.o.Engine.(tryAcquirer); ok {
		if lease, answered, err := ta.TryAcquireID(id); answered {
			return lease, false, err // the usual case, a loaded model: no goroutine, no timer
		}
	}
	done := make(chan struct{}) // closed once the goroutine set lease and err
	go func() {
		lease, err = srv.o.Engine.AcquireID(ctx, id)
		close(done)
	}()
	timer := time.NewTimer(srv.loadingAfter)
	defer timer.Stop()
	select {
	case <-done:
		return lease, false, err
	case <-timer.C:
	}

	startSSE(w)
	srv.loadingComment(w, id)
	ticker := time.NewTicker(srv.loadingEvery)
	defer ticker.Stop()
	for {
		select {
		case <-done:
			return lease, true, err
		case <-ticker.C:
			// A write error means the client left; Acquire sees the same cancelled context.
			srv.loadingComment(w, id)
		}
	}
}

// loadingComment writes one SSE comment line about the loading model and flushes it: why the
// request waits, in the words every surface uses (view.WaitText), ": loading model m1 (waiting: 2nd
// in line for 5.1 GiB (2.0 GiB free); beta will be unloaded when its 1 request ends)"; while its own
// load runs, how far it is, ": loading model m1 (40%)".
func (srv *Server) loadingComment(w http.ResponseWriter, id string) {
	line := ": loading model " + id
	st, err := srv.o.Engine.Model(id)
	if err == nil && st.Wait != nil && st.Wait.Kind != engine.WaitLoading {
		line += " (" + view.WaitText(st) + ")"
	} else if err == nil && st.State == engine.StateLoading && st.Progress > 0 {
		line += fmt.Sprintf(" (%.0f%%)", st.Progress*100)
	} else if err == nil && st.Queued > 0 && st.State != engine.StateLoading {
		line += " (queued)"
	}
	_, _ = w.Write([]byte(line + "\n\n"))
	_ = http.NewResponseController(w).Flush()
}

// writeSSEError ends a stream whose headers were already sent with an error event.
func writeSSEError(w http.ResponseWriter, r *http.Request, err error) {
	e, ok := failed(r, err)
	if !ok {
		return
	}
	_, _ = w.Write(proxy.SSEEvent("", e.body()))
	_ = http.NewResponseController(w).Flush()
}
