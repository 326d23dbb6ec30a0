package proxy

import (
	"io"
	"mime"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"
	"sync"

	"github.com/llamatray/llamatray/router/internal/h1"
)

// OutRequest is the request to a child: r pointed at to (its path replaced by path and rawPath when
// path is set), its headers copied but for the hop-by-hop and forwarding ones and the router's own
// credentials, with X-Request-Id ids when set. It shares r's body (the handler's own bytes, in a
// reader net/http knows to be in memory) and context. stream says the body asked for a stream. nil:
// r asks to switch to a protocol name that is not printable ASCII.
func OutRequest(r *http.Request, to *url.URL, path, rawPath string, stream bool, ids []string) *http.Request {
	up := UpgradeType(r.Header)
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
	out.Close = stream
	out.Trailer = nil // the body goes with its length: no trailers follow it
	if r.ContentLength == 0 {
		out.Body, out.GetBody = nil, nil
	}
	u := *to
	u.Path, u.RawPath = joinPath(to, r.URL)
	switch q := cleanQuery(r.URL.RawQuery); {
	case u.RawQuery == "":
		u.RawQuery = q
	case q != "":
		u.RawQuery += "&" + q
	}
	if path != "" {
		u.Path, u.RawPath = path, rawPath
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
	if ids != nil {
		h["X-Request-Id"] = ids
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

// RemoveHopByHop deletes from h the hop-by-hop headers and every header its Connection names.
func RemoveHopByHop(h http.Header) {
	dropNamed(h, h["Connection"])
	for k := range h {
		if isHopHeader(k) {
			delete(h, k)
		}
	}
}

// UpgradeType is the protocol a request asks to switch to ("" when none).
func UpgradeType(h http.Header) string {
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
			if i+2 >= len(q) || !h1.IsHex(q[i+1]) || !h1.IsHex(q[i+2]) {
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

// WriteHead sends resp's status and headers to w, added to those w has, and returns the flush to
// call after every write of an answer flushEach picks (its headers go at once), else nil.
func WriteHead(w http.ResponseWriter, resp *http.Response) (flush func() error) {
	h := w.Header()
	for k, vv := range resp.Header {
		if prev, ok := h[k]; ok {
			h[k] = append(prev, vv...)
		} else {
			h[k] = vv // resp is this request's own: its values are not used again
		}
	}
	w.WriteHeader(resp.StatusCode)
	if flushEach(resp) {
		flush = http.NewResponseController(w).Flush
		_ = flush() // the headers now, before the first event
	}
	return flush
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

// copyBufferPool recycles Copy's 32 KiB buffers. A pointer to an array: a slice put in a Pool would
// be boxed, one allocation per Put.
var copyBufferPool = sync.Pool{New: func() any { return new([32 << 10]byte) }}

// Copy copies an answer's body to w through one of the proxy's copy buffers, calling flush (when
// set) after every write. It returns the first read or write error.
func Copy(w io.Writer, body io.Reader, flush func() error) error {
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
			return rerr
		}
	}
}
