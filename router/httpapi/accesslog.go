package httpapi

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/llamatray/llamatray/router/activity"
	"github.com/llamatray/llamatray/router/internal/h1"
)

// requestIDHeader carries the request ID from the client, to the child and back.
const requestIDHeader = "X-Request-Id"

type infoKey struct{}

// reqInfo is what the middlewares know of a request and what a handler reports to the access log.
// Only the request's own goroutine (the handler and the proxy it calls synchronously) touches it,
// so it needs no lock.
type reqInfo struct {
	id     string
	ids    [1]string // id, as the one value of the X-Request-Id headers both ways (never changed)
	model  string
	waited time.Duration
	status int // overrides the written status in the log (499 when the client left)
	err    error
	// routed: a model-routed request whose model resolved (serveModel), counted in the metrics;
	// leased: it got a lease, so waited is its queue wait; usage: what the answer reported
	routed bool
	leased bool
	usage  *activity.Usage
	// target: where serveModel proxies it (proxy.go), read by forward and the children's transport (dest);
	// it points at tv (newTarget)
	target *proxyTarget
	tv     proxyTarget
	lw     logWriter // the handlers' writer (accessLog); here, one allocation for both
	// crossSite: a page of another site sent it (cors decides, crossSite reads): it may read what
	// runs, never start a load, a rescan or a call to the Hub or GitHub
	crossSite bool
}

// newTarget makes t the request's target, kept in info (or on its own when info is nil).
func (info *reqInfo) newTarget(t proxyTarget) *proxyTarget {
	if info == nil {
		return &t
	}
	info.tv = t
	info.target = &info.tv
	return info.target
}

func infoFrom(ctx context.Context) *reqInfo {
	info, _ := ctx.Value(infoKey{}).(*reqInfo)
	return info
}

// requestIDs is the request's X-Request-Id as a header's values, nil without info.
func (info *reqInfo) requestIDs() []string {
	if info == nil {
		return nil
	}
	return info.ids[:]
}

// requestID returns the client's X-Request-Id when it is sane, else a new random one.
func requestID(r *http.Request) string {
	if id := r.Header.Get(requestIDHeader); len(id) <= 128 && h1.VisibleASCII(id) {
		return id
	}
	// An ID to find a request in logs, not a secret: math/rand/v2's generator needs no system call
	// per request, which crypto/rand's does.
	var b [12]byte
	binary.LittleEndian.PutUint64(b[:8], rand.Uint64())
	binary.LittleEndian.PutUint32(b[8:], rand.Uint32())
	return hex.EncodeToString(b[:])
}

// accessLog assigns the request ID, echoes it, and logs every request once it ends (also when the
// handler aborts the connection with a panic, which is re-raised).
func (srv *Server) accessLog(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		info := &reqInfo{id: requestID(r)}
		info.ids[0] = info.id
		w.Header()[requestIDHeader] = info.ids[:]
		lw := &info.lw
		lw.ResponseWriter = w
		r = r.WithContext(context.WithValue(r.Context(), infoKey{}, info))
		aborted := true
		defer func() {
			status := lw.status
			if info.status != 0 {
				status = info.status
			} else if status == 0 {
				status = http.StatusOK
			}
			if aborted {
				status = statusClientClosed
				if r.Context().Err() == nil {
					status = http.StatusBadGateway // aborted by us: the upstream failed mid-response
				}
			}
			took := time.Since(start)
			if info.routed {
				srv.countRequest(info, status, took)
			}
			level := slog.LevelInfo
			if isHealth(r.URL.Path) {
				level = slog.LevelDebug // polled by clients and the tray
			}
			if !srv.log.Enabled(context.Background(), level) {
				return // the usual case at log_level "warn": nothing to build
			}
			attrs := []slog.Attr{
				slog.String("method", r.Method),
				slog.String("path", r.URL.Path),
				slog.String("model", info.model),
				slog.Int("status", status),
				slog.Int64("bytes", lw.bytes),
				slog.Duration("duration", took),
				slog.Duration("queue_wait", info.waited),
				slog.String("request_id", info.id),
			}
			if info.err != nil {
				attrs = append(attrs, slog.String("error", info.err.Error()))
			}
			if info.crossSite {
				attrs = append(attrs, slog.Bool("cross_site", true))
			}
			srv.log.LogAttrs(context.Background(), level, "request", attrs...)
		}()
		next.ServeHTTP(lw, r)
		aborted = false
	})
}

// logWriter records the status and body size for the access log.
type logWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (w *logWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *logWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(p)
	w.bytes += int64(n)
	return n, err
}

// Flush sends buffered data to the client at once (SSE): once per event of a stream, so straight
// to net/http's writer when it is one, without a ResponseController each time.
func (w *logWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
		return
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the connection (flush, hijack, deadlines).
func (w *logWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
