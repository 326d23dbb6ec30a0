package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"

	"github.com/llamatray/llamatray/router/internal/h1"
)

// forward proxies r to t's child over srv.children and copies the answer to w. It is the reverse
// proxy of every model-routed request, doing what net/http/httputil's ReverseProxy did here
// (outRequest, childAnswer and proxyError do what its hooks did), without what that one spends per request on
// features this proxy does not use: a clone of the request and of its headers and a second copy with
// a client trace in its context (for 1xx answers relayed from a Transport), a timer goroutine to
// flush a stream's headers. The rules are the same: hop-by-hop headers dropped both ways (those the
// Connection header names too), Forwarded and X-Forwarded-* dropped, unparsable query parameters
// dropped, no User-Agent of Go's own added, announced trailers relayed, an SSE answer or one of
// unknown length flushed after every write (its headers at once), an answer cut while it is copied
// ending the client's connection (http.ErrAbortHandler), and a child's 101 answered 502: upgrades
// are not relayed.
func (srv *Server) forward(w http.ResponseWriter, r *http.Request, t *proxyTarget) {
	out := outRequest(r, t)
	if out == nil {
		srv.proxyError(w, r, fmt.Errorf("client tried to switch to invalid protocol %q", upgradeType(r.Header)))
		return
	}
	resp, err := srv.children.RoundTrip(out)
	if err != nil {
		srv.proxyError(w, out, err)
		return
	}
	if resp.StatusCode == http.StatusSwitchingProtocols {
		_ = resp.Body.Close()
		srv.proxyError(w, out, errors.New("llama-server switched protocols, which the proxy does not relay"))
		return
	}
	removeHopByHop(resp.Header)
	srv.childAnswer(resp)
	h := w.Header()
	for k, vv := range resp.Header {
		if prev, ok := h[k]; ok {
			h[k] = append(prev, vv...)
		} else {
			h[k] = vv // resp is this request's own: its values are not used again
		}
	}
	announced := len(resp.Trailer)
	if announced > 0 {
		keys := make([]string, 0, announced)
		for k := range resp.Trailer {
			keys = append(keys, k)
		}
		h.Add("Trailer", strings.Join(keys, ", "))
	}
	w.WriteHeader(resp.StatusCode)
	var flush func() error
	if flushEach(resp) {
		flush = http.NewResponseController(w).Flush
		_ = flush() // the headers now, before the first event
	}
	if err := srv.copyAnswer(w, resp.Body, flush); err != nil {
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
	for k, vv := range resp.Trailer {
		if announced != len(resp.Trailer) {
			k = http.TrailerPrefix + k
		}
		for _, v := range vv {
			h.Add(k, v)
		}
	}
}

// outRequest is the request to the child: r pointed at t, its headers copied but for the
// hop-by-hop and forwarding ones and the router's own credentials, with the request ID. It shares
// r's body (the handler's own bytes, in a reader net/http knows to be in memory) and context. nil:
// r asks to switch to a protocol name that is not printable ASCII.
func outRequest(r *http.Request, t *proxyTarget) *http.Request {
	up := upgradeType(r.Header)
	for i := 0; i < len(up); i++ {
		if up[i] < ' ' || up[i] > '~' {
			return nil
		}
	}
	out := new(http.Request)
	*out = *r // shallow, as Request.WithContext makes; every field that differs is set below
	out.RequestURI = ""
	// llama-server closes the connection after a stream (it answers keep-alive and closes anyway).
	// Kept in the pool, that connection would be picked by a later request before its close is
	// noticed, costing a failed write and a retry on a new one; so a stream's connection is not kept.
	out.Close = t.stream
	out.Trailer = nil // the body goes with its length: no trailers follow it
	if r.ContentLength == 0 {
		out.Body, out.GetBody = nil, nil
	}
	u := *t.url
	u.Path, u.RawPath = joinPath(t.url, r.URL)
	switch q := cleanQuery(r.URL.RawQuery); {
	case u.RawQuery == "":
		u.RawQuery = q
	case q != "":
		u.RawQuery += "&" + q
	}
	if t.path != "" {
		u.Path, u.RawPath = t.path, t.rawPath
	}
	out.URL, out.Host = &u, ""

	h := make(http.Header, len(r.Header)+2)
	for k, vv := range r.Header {
		if !notForwarded(k) {
			h[k] = vv // values shared, never changed: only whole keys are set or deleted below
		}
	}
	dropNamed(h, r.Header["Connection"])
	if h1.HeaderHas(r.Header["Te"], "trailers") {
		h["Te"] = []string{"trailers"}
	}
	if up != "" {
		h["Connection"], h["Upgrade"] = []string{"Upgrade"}, []string{up}
	}
	if _, ok := h["User-Agent"]; !ok {
		h["User-Agent"] = []string{""} // none of Go's own
	}
	if info := infoFrom(r.Context()); info != nil {
		h[requestIDHeader] = info.ids[:]
	}
	out.Header = h
	return out
}

// isHopHeader reports the hop-by-hop headers of RFC 9110 section 7.6.1 and their older kin.
func isHopHeader(k string) bool {
	switch k {
	case "Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade":
		return true
	}
	return false
}

// notForwarded reports the request headers that never go to a child: the hop-by-hop ones, the
// forwarding ones (the child sees the proxy as its client) and the credentials for Llamatray itself.
func notForwarded(k string) bool {
	switch k {
	case "Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto", "Authorization", "X-Api-Key":
		return true
	}
	return isHopHeader(k)
}

// dropNamed deletes from h every header a Connection header's values name.
func dropNamed(h http.Header, connection []string) {
	for _, f := range connection {
		for name := range strings.SplitSeq(f, ",") {
			if name = textproto.TrimString(name); name != "" {
				h.Del(name)
			}
		}
	}
}

// removeHopByHop deletes from h the hop-by-hop headers and every header its Connection names.
func removeHopByHop(h http.Header) {
	dropNamed(h, h["Connection"])
	for k := range h {
		if isHopHeader(k) {
			delete(h, k)
		}
	}
}

// upgradeType is the protocol a request asks to switch to ("" when none).
func upgradeType(h http.Header) string {
	if !h1.HeaderHas(h["Connection"], "upgrade") {
		return ""
	}
	return h.Get("Upgrade")
}

// joinPath is the path of the request to the child: the target's path, when it has one, joined
// with the request's by one slash; the escaped form kept where either has one.
func joinPath(target, req *url.URL) (path, rawPath string) {
	if target.Path == "" && target.RawPath == "" {
		return req.Path, req.RawPath
	}
	join := func(a, b string) string {
		switch as, bs := strings.HasSuffix(a, "/"), strings.HasPrefix(b, "/"); {
		case as && bs:
			return a + b[1:]
		case !as && !bs && b != "":
			return a + "/" + b
		}
		return a + b
	}
	if target.RawPath == "" && req.RawPath == "" {
		return join(target.Path, req.Path), ""
	}
	return join(target.Path, req.Path), join(target.EscapedPath(), req.EscapedPath())
}

// cleanQuery is q without the parameters a server could read otherwise than the router did (a
// semicolon, a bad escape): such a query is parsed and encoded again, dropping what does not parse.
func cleanQuery(q string) string {
	for i := 0; i < len(q); i++ {
		switch q[i] {
		case ';':
			return reencodeQuery(q)
		case '%':
			if i+2 >= len(q) || !isHex(q[i+1]) || !isHex(q[i+2]) {
				return reencodeQuery(q)
			}
			i += 2
		}
	}
	return q
}

func reencodeQuery(q string) string {
	v, _ := url.ParseQuery(q)
	return v.Encode()
}

// flushEach reports an answer that is flushed after every write: an event stream, or a body of
// unknown length.
func flushEach(resp *http.Response) bool {
	if resp.ContentLength == -1 {
		return true
	}
	ct := resp.Header.Get("Content-Type")
	if ct == "" || strings.HasPrefix(ct, "application/json") {
		return false // the usual answer, without parsing its media type
	}
	base, _, _ := mime.ParseMediaType(ct)
	return base == "text/event-stream"
}

// copyAnswer copies body to w through one of the proxy's copy buffers, calling flush (when set)
// after every write. It returns the first read or write error; a read error that is not the
// client's leaving is logged.
func (srv *Server) copyAnswer(w io.Writer, body io.Reader, flush func() error) error {
	arr := copyBufferPool.Get().(*[32 << 10]byte)
	defer copyBufferPool.Put(arr)
	buf := arr[:]
	for {
		n, rerr := body.Read(buf)
		if n > 0 {
			m, werr := w.Write(buf[:n])
			if werr == nil && m != n {
				werr = io.ErrShortWrite
			}
			if werr != nil {
				return werr
			}
			if flush != nil {
				_ = flush()
			}
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			if !errors.Is(rerr, context.Canceled) {
				srv.log.Debug("reading llama-server's answer", "error", rerr)
			}
			return rerr
		}
	}
}
