package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"

	"github.com/llamatray/llamatray/router/internal/h1"
)

// writeRequest writes req to bw as net/http's Request.Write does, for the requests forward makes:
// the request line, Host, User-Agent, Connection: close and Content-Length where they apply, the
// other headers, then the body. It writes them itself, without net/http's formatting, sorting of
// header names and transfer bookkeeping (6% of the router's CPU per request); any request it is not
// sure to write the same (a body of unknown length, a transfer coding, trailers, an upgrade, odd bytes
// in the host, the target or a header) goes through Request.Write.
func writeRequest(bw *bufio.Writer, req *http.Request) error {
	if !plainRequest(req) {
		return req.Write(bw)
	}
	if req.Body != nil {
		defer req.Body.Close()
	}
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	bw.WriteString(req.Method)
	bw.WriteByte(' ')
	bw.WriteString(req.URL.RequestURI())
	bw.WriteString(" HTTP/1.1\r\nHost: ")
	bw.WriteString(host)
	bw.WriteString("\r\n")
	ua := "Go-http-client/1.1" // net/http's default, when the header is absent
	if vv, ok := req.Header["User-Agent"]; ok {
		ua = ""
		if len(vv) > 0 {
			ua = textproto.TrimString(vv[0])
		}
	}
	if ua != "" {
		bw.WriteString("User-Agent: ")
		bw.WriteString(ua)
		bw.WriteString("\r\n")
	}
	if req.Close && !h1.HeaderHas(req.Header["Connection"], "close") {
		bw.WriteString("Connection: close\r\n")
	}
	if sendLength(req) {
		bw.WriteString("Content-Length: ")
		bw.WriteString(strconv.FormatInt(req.ContentLength, 10))
		bw.WriteString("\r\n")
	}
	for k, vv := range req.Header {
		switch k {
		case "Host", "User-Agent", "Content-Length", "Transfer-Encoding", "Trailer":
			continue
		}
		for _, v := range vv {
			bw.WriteString(k)
			bw.WriteString(": ")
			bw.WriteString(textproto.TrimString(v))
			bw.WriteString("\r\n")
		}
	}
	if _, err := bw.WriteString("\r\n"); err != nil {
		return err
	}
	if req.Body == nil || req.Body == http.NoBody {
		return nil
	}
	n, err := io.Copy(bw, req.Body)
	if err == nil && n != req.ContentLength {
		err = fmt.Errorf("http: ContentLength=%d with Body length %d", req.ContentLength, n)
	}
	return err
}

// sendLength is net/http's rule for a request of known length: a Content-Length for a body, and
// "Content-Length: 0" for an empty POST, PUT or PATCH (many servers expect one there).
func sendLength(req *http.Request) bool {
	switch req.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch:
		return true
	}
	return req.ContentLength > 0
}

// plainRequest reports a request writeRequest writes as Request.Write would: a known length with
// its body (or none), no transfer coding, trailers or upgrade, and nothing in the method, host,
// target or headers that Request.Write would refuse, clean or encode.
func plainRequest(req *http.Request) bool {
	if req.URL == nil || req.ContentLength < 0 || len(req.TransferEncoding) > 0 || len(req.Trailer) > 0 ||
		(req.ContentLength > 0) != (req.Body != nil && req.Body != http.NoBody) || req.Method == "" || req.Method == http.MethodConnect ||
		req.URL.Opaque != "" || req.URL.Path == "" || strings.ContainsAny(req.Method, " \t\r\n") {
		return false
	}
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	if host == "" {
		return false
	}
	for i := 0; i < len(host); i++ {
		if c := host[i]; !(c == '.' || c == '-' || c == ':' || c == '[' || c == ']' || c == '_' ||
			'0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return false // a zone, a name to encode in Punycode, or bytes Request.Write drops the host for
		}
	}
	for _, c := range []byte(req.URL.RequestURI()) {
		if c <= ' ' || c == 0x7f {
			return false // Request.Write refuses control bytes in the target
		}
	}
	if h1.HeaderHas(req.Header["Connection"], "upgrade") {
		return false
	}
	for k, vv := range req.Header {
		if k == "" || strings.IndexByte(k, ':') >= 0 || strings.IndexByte(k, ' ') >= 0 || strings.IndexByte(k, '\t') >= 0 || h1.HasLineBreak(k) {
			return false
		}
		for _, v := range vv {
			if h1.HasLineBreak(v) {
				return false // Request.Write turns line breaks into spaces
			}
		}
	}
	return true
}
