package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/llamatray/llamatray/router/activity"
	"github.com/llamatray/llamatray/router/engine"
	"github.com/llamatray/llamatray/router/proxy"
	"github.com/llamatray/llamatray/router/view"
)

type targetKey struct{}

// proxyTarget is where and how one request is proxied: serveModel and forwardPeer make it, forward
// carries it, and the children's transport (dest) finds it in the request's context (targetOf).
type proxyTarget struct {
	model   string // canonical ID
	url     *url.URL
	socket  string // the child's unix socket, when it is on one
	path    string // when set, replaces the path (the /upstream prefix stripped)
	rawPath string
	early   bool            // headers were already sent to the client (loading progress)
	lost    *engine.Lease   // its Lost: a worker link whose loss ended the child, naming the worker (nil: no lease)
	stream  bool            // the body asked for a stream
	status  int             // the child's answer status, 0 until it answered
	usage   *activity.Usage // what the answer reported of itself (activity.go), nil when nothing
	body    proxy.Body      // the request's body, as sent
}

// targetOf is the target of the exchange ctx is of: in the request's reqInfo (accessLog), or, for a
// request that came by no access log, in a context value of its own.
func targetOf(ctx context.Context) *proxyTarget {
	if info := infoFrom(ctx); info != nil && info.target != nil {
		return info.target
	}
	t, _ := ctx.Value(targetKey{}).(*proxyTarget)
	return t
}

// dest is where the exchange ctx is of goes, for the children's Transport: the model and its
// child's unix socket ("" when it listens on a port).
func dest(ctx context.Context) (model, socket string) {
	if t := targetOf(ctx); t != nil {
		return t.model, t.socket
	}
	return "", ""
}

// childAnswer drops the child's X-Request-Id (ours is already set) and every CORS header it
// sent (llama-server echoes any Origin, and answers none with an empty Allow-Origin): the cors
// middleware alone decides what a browser may read. A stream gets the opening the child left out
// (proxy.Repair). When the client already got an SSE response (loading progress), an error status
// from the child becomes an SSE error event.
func childAnswer(resp *http.Response, t *proxyTarget, requestID string) {
	resp.Header.Del(requestIDHeader)
	dropCORS(resp.Header)
	watchUsage(resp, t)
	proxy.Repair(resp, t.model, requestID)
	if !t.early || resp.StatusCode < 300 {
		return
	}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	ev := proxy.SSEEvent("", upstreamErrorBody(resp.StatusCode, raw))
	resp.Body = io.NopCloser(bytes.NewReader(ev))
	resp.ContentLength = int64(len(ev))
	resp.Header.Del("Content-Length")
}

func dropCORS(h http.Header) {
	for k := range h {
		if len(k) > len("Access-Control-") && strings.EqualFold(k[:len("Access-Control-")], "Access-Control-") {
			delete(h, k)
		}
	}
}

// upstreamErrorBody keeps a child's JSON error document as it is, else wraps its text in one.
func upstreamErrorBody(status int, raw []byte) []byte {
	raw = bytes.TrimSpace(raw)
	var buf bytes.Buffer
	if len(raw) > 0 && raw[0] == '{' && json.Compact(&buf, raw) == nil {
		return buf.Bytes()
	}
	msg := strings.TrimSpace(string(raw))
	if msg == "" {
		msg = http.StatusText(status)
	}
	return apiError{Type: "server_error", Code: "upstream_error", Message: fmt.Sprintf("llama-server answered %d: %s", status, msg)}.body()
}

// proxyError answers a failed round trip to t's child (it could not be reached or answered garbage).
func (srv *Server) proxyError(w http.ResponseWriter, r *http.Request, t *proxyTarget, err error) {
	if r.Context().Err() != nil {
		if info := infoFrom(r.Context()); info != nil {
			info.status, info.err = statusClientClosed, err
		}
		return
	}
	err = fmt.Errorf("%w for model %q: %w", errUpstream, t.model, t.lostOr(err))
	srv.log.Warn("proxy error", "model", t.model, "error", err)
	if t.early {
		writeSSEError(w, r, err)
		return
	}
	writeError(w, r, err)
}

// lostOr is err, after the worker error that ended t's child when a worker's link was lost.
func (t *proxyTarget) lostOr(err error) error {
	if cause := t.lost.Lost(); cause != nil {
		return fmt.Errorf("%w (%v)", cause, err)
	}
	return err
}

// sentWriter is the client's writer after the headers were sent early: the proxy's header and
// status writes go nowhere, the body goes through.
type sentWriter struct {
	http.ResponseWriter
	h http.Header
}

func (s *sentWriter) Header() http.Header         { return s.h }
func (s *sentWriter) WriteHeader(int)             {}
func (s *sentWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// resolve maps a requested name (ID or alias) to a catalog ID. Anything else — in particular a file
// path — is an unknown model.
func (srv *Server) resolve(name string) (string, error) {
	if view.PathLike(name) {
		return "", &engine.UnknownModelError{Name: name}
	}
	id, err := srv.o.Engine.Resolve(name) // the one resolution of the request's name: the ID goes on (AcquireID)
	if err != nil {
		return "", srv.resolveHub(name, err)
	}
	if srv.o.Catalog != nil {
		if !srv.o.Catalog.Has(id) { // by ID: a model the engine runs but the catalog dropped
			return "", &engine.UnknownModelError{Name: name}
		}
	}
	return id, nil
}

// serveModel resolves name, holds a lease on the model for the whole proxied exchange and proxies
// the request with body to the child. path, when set, replaces the request path upstream.
func (srv *Server) serveModel(w http.ResponseWriter, r *http.Request, name string, body []byte, stream bool, path, rawPath string) {
	info := infoFrom(r.Context())
	start := time.Now()
	if name == "" {
		name = srv.o.DefaultModel
	}
	if name == "" {
		writeError(w, r, errModelRequired)
		return
	}
	if srv.servePeer(w, r, name, body, stream, path, rawPath) { // peers.go
		return
	}
	id, err := srv.resolveRequest(r, name)
	if err != nil {
		writeError(w, r, err)
		return
	}
	if info != nil {
		info.model, info.routed = id, true
	}
	if body, err = srv.applyRules(r, id, body, path); err != nil {
		writeError(w, r, err)
		return
	}
	if err := srv.checkAutoload(r, id); err != nil {
		writeError(w, r, err)
		return
	}
	lease, early, err := srv.acquire(w, r, id, stream)
	if err != nil && r.Context().Err() == nil {
		srv.o.Activity.Record(activity.Sample{Model: id, Wait: time.Since(start)})
	}
	if lease != nil {
		// Released when the response is fully written, the client is gone, or the proxy aborts the
		// connection with a panic.
		defer lease.Release()
	}
	if err != nil {
		if early {
			writeSSEError(w, r, err)
		} else {
			writeError(w, r, err)
		}
		return
	}
	if info != nil {
		info.waited, info.leased = lease.Waited, true
	}
	if lease.URL == nil {
		writeError(w, r, fmt.Errorf("%w: the engine gave no address for model %q", errUpstream, id))
		return
	}
	t := info.newTarget(proxyTarget{model: id, url: lease.URL, socket: lease.Socket, path: path, rawPath: rawPath, early: early, stream: stream, lost: lease})
	proxy.SetBody(r, &t.body, body, false)
	if info == nil {
		r = r.WithContext(context.WithValue(r.Context(), targetKey{}, t))
	}
	if early {
		w = &sentWriter{ResponseWriter: w, h: make(http.Header)}
	}
	srv.forward(w, r, t)
	srv.record(t, lease.Waited)
	if info != nil {
		info.usage = t.usage
	}
}
