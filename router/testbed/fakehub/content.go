package fakehub

import (
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// serveCDN serves file content, honouring Range, with the cut and stall faults.
func (h *Hub) serveCDN(w http.ResponseWriter, req *http.Request) {
	h.cdnRequests.Add(1)
	if req.Header.Get("Authorization") != "" {
		h.cdnAuth.Add(1)
	}
	rest := strings.TrimPrefix(req.URL.EscapedPath(), "/blobs/")
	parts := strings.SplitN(rest, "/", 4)
	if len(parts) < 4 {
		http.NotFound(w, req)
		return
	}
	name, _ := url.PathUnescape(parts[3])
	h.mu.Lock()
	r := h.repos[parts[0]+"/"+parts[1]]
	var f *file
	if r != nil {
		f = r.files[name]
	}
	var cut, stall int64
	var stalls chan struct{}
	ignoreRange := false
	if f != nil {
		cut, stall, stalls, ignoreRange = f.cutAt, f.stall, f.stalls, f.ignoreRange
		if req.Method == http.MethodGet && (req.Header.Get("Range") == "" || ignoreRange) {
			f.cutAt = 0 // the cut happens once
		}
		if ignoreRange && f.cutEvery > 0 {
			cut = f.cutEvery
		}
	}
	h.mu.Unlock()
	if ignoreRange {
		req.Header.Del("Range") // the whole file from its start, 200, whatever was asked
	}
	if f == nil {
		http.NotFound(w, req)
		return
	}
	if req.Header.Get("Range") != "" {
		h.rangeRequests.Add(1)
	}
	in, err := os.Open(f.local)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	defer in.Close()
	w.Header().Set("Content-Type", "application/octet-stream")
	var out io.Writer = w
	switch {
	case cut > 0 && req.Header.Get("Range") == "":
		out = &cutter{w: w, left: cut, hijack: func() { hijackClose(w) }}
	case stall > 0 && !boundedRange(req.Header.Get("Range")):
		out = &staller{w: w, left: stall, ctx: req.Context().Done(), reached: stalls}
	}
	http.ServeContent(&writerOverride{ResponseWriter: w, out: out}, req, "", time.Time{}, in)
}

// writerOverride sends the body through out.
type writerOverride struct {
	http.ResponseWriter
	out io.Writer
}

func (w *writerOverride) Write(b []byte) (int, error) { return w.out.Write(b) }

// cutter passes left bytes, then drops the connection.
type cutter struct {
	w      http.ResponseWriter
	left   int64
	hijack func()
	done   bool
}

func (c *cutter) Write(b []byte) (int, error) {
	if c.done {
		return 0, io.ErrClosedPipe
	}
	if int64(len(b)) <= c.left {
		c.left -= int64(len(b))
		return c.w.Write(b)
	}
	n, _ := c.w.Write(b[:c.left])
	if f, ok := c.w.(http.Flusher); ok {
		f.Flush()
	}
	c.done = true
	c.hijack()
	return n, io.ErrClosedPipe
}

func hijackClose(w http.ResponseWriter) {
	if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
		conn.Close()
	}
}

// staller passes left bytes, then blocks until the client leaves.
type staller struct {
	w       http.ResponseWriter
	left    int64
	ctx     <-chan struct{}
	reached chan struct{}
}

func (s *staller) Write(b []byte) (int, error) {
	if int64(len(b)) <= s.left {
		s.left -= int64(len(b))
		return s.w.Write(b)
	}
	n, _ := s.w.Write(b[:s.left])
	s.left = 0
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
	select {
	case s.reached <- struct{}{}:
	default:
	}
	<-s.ctx
	return n, io.ErrClosedPipe
}

// boundedRange tells a "bytes=A-B" range (a header read) from an open-ended one (a resume).
func boundedRange(h string) bool {
	r, ok := strings.CutPrefix(h, "bytes=")
	if !ok {
		return false
	}
	_, end, _ := strings.Cut(r, "-")
	return end != ""
}
