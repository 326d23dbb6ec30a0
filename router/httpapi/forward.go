package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/llamatray/llamatray/router/proxy"
)

// forward proxies r to t's child over srv.children and copies the answer to w: the reverse proxy of
// every model-routed request, with net/http/httputil's ReverseProxy's rules and without its per-request
// clones, client trace and flush timer. The rules: hop-by-hop headers dropped both ways (those the
// Connection header names too), Forwarded and X-Forwarded-* dropped, unparsable query parameters
// dropped, no User-Agent of Go's own added, announced trailers relayed, an SSE answer or one of
// unknown length flushed after every write (its headers at once), an answer cut while it is copied
// ending the client's connection (http.ErrAbortHandler), and a child's 101 answered 502: upgrades
// are not relayed.
func (srv *Server) forward(w http.ResponseWriter, r *http.Request, t *proxyTarget) {
	info := infoFrom(r.Context())
	out := proxy.OutRequest(r, t.url, t.path, t.rawPath, t.stream, info.requestIDs())
	if out == nil {
		srv.proxyError(w, r, t, fmt.Errorf("client tried to switch to invalid protocol %q", proxy.UpgradeType(r.Header)))
		return
	}
	resp, err := srv.children.RoundTrip(out)
	if err != nil {
		srv.proxyError(w, out, t, err)
		return
	}
	if resp.StatusCode == http.StatusSwitchingProtocols {
		_ = resp.Body.Close()
		srv.proxyError(w, out, t, errors.New("llama-server switched protocols, which the proxy does not relay"))
		return
	}
	proxy.RemoveHopByHop(resp.Header)
	id := ""
	if info != nil {
		id = info.id
	}
	childAnswer(resp, t, id)
	announced := len(resp.Trailer)
	if announced > 0 {
		resp.Header.Add("Trailer", strings.Join(slices.Collect(maps.Keys(resp.Trailer)), ", "))
	}
	flush := proxy.WriteHead(w, resp)
	if err := srv.copyAnswer(w, resp.Body, flush, t.model); err != nil {
		_ = resp.Body.Close()
		if flush != nil && t.lost.Lost() != nil {
			// A worker's link was lost mid-stream: the stream ends with an error event naming it.
			writeSSEError(w, out, fmt.Errorf("%w for model %q: %w", errUpstream, t.model, t.lostOr(err)))
			return
		}
		if out.Context().Value(http.ServerContextKey) != nil {
			// The answer was cut midway and the status is sent: all that is left is to end the
			// connection, so that the client sees a broken answer, not a short one.
			panic(http.ErrAbortHandler)
		}
		return
	}
	_ = resp.Body.Close() // fills resp.Trailer
	if len(resp.Trailer) == 0 {
		return
	}
	// A trailer forces chunking: net/http must not compute a length for a short body.
	_ = http.NewResponseController(w).Flush()
	h := w.Header()
	for k, vv := range resp.Trailer {
		if announced != len(resp.Trailer) {
			k = http.TrailerPrefix + k
		}
		for _, v := range vv {
			h.Add(k, v)
		}
	}
}

// copyAnswer is proxy.Copy, logging an error that is not the client's leaving.
func (srv *Server) copyAnswer(w io.Writer, body io.Reader, flush func() error, model string) error {
	err := proxy.Copy(w, body, flush)
	if err != nil && !errors.Is(err, context.Canceled) {
		srv.log.Debug("copying an answer", "model", model, "error", err)
	}
	return err
}
