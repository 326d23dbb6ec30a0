package proxy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"net/textproto"
	"strconv"
	"strings"

	"github.com/llamatray/llamatray/router/internal/h1"
)

// readAnswer reads the head of the child's answer to req from br, as http.ReadResponse does. The
// answers llama-server sends are read here, without net/http's textproto reader and its copies:
// "HTTP/1.1 NNN reason" with a final status, header lines of token names and plain values ending in
// CRLF, and a body of one Content-Length of digits or chunked. Anything else (a 1xx, HEAD, 204 or
// 304, a body until close, announced trailers, an odd line) goes to http.ReadResponse unread, so
// that the two never read one answer differently.
func readAnswer(br *bufio.Reader, req *http.Request) (*http.Response, error) {
	if resp, ok := parseAnswer(br, req); ok {
		return resp, nil
	}
	return http.ReadResponse(br, req)
}

// parseAnswer is readAnswer's own reading; ok false leaves br as it was.
func parseAnswer(br *bufio.Reader, req *http.Request) (*http.Response, bool) {
	if req.Method == http.MethodHead {
		return nil, false
	}
	b, end := peekHead(br)
	if end < 0 {
		return nil, false
	}
	raw := b[:end+2]
	if !h1.CRLFOnly(raw) {
		return nil, false
	}
	s := string(raw) // one string: the status and every name and value are slices of it
	line, rest, _ := h1.Cut(s)
	if len(line) < 12 || line[:9] != "HTTP/1.1 " || !h1.Digits(line[9:12]) || len(line) > 12 && line[12] != ' ' {
		return nil, false
	}
	code, _ := strconv.Atoi(line[9:12])
	if code < 200 || code > 599 || code == http.StatusNoContent || code == http.StatusNotModified || !h1.ValidValue(line[12:]) {
		return nil, false
	}
	status := line[9:]

	n := strings.Count(rest, "\n")
	values := make([]string, n) // one array behind every header's value slice
	header := make(http.Header, n)
	length, lengths, chunked, encodings, closing := int64(-1), 0, false, 0, false
	for i := 0; rest != ""; i++ {
		line, rest, _ = h1.Cut(rest)
		key, value, ok := h1.Field(line)
		if !ok {
			return nil, false
		}
		switch key {
		case "Content-Length":
			lengths++
			if length, ok = h1.Length(value); !ok {
				return nil, false
			}
		case "Transfer-Encoding":
			if encodings++; !strings.EqualFold(value, "chunked") {
				return nil, false
			}
			chunked = true
			continue // net/http keeps it in TransferEncoding only
		case "Trailer":
			return nil, false
		case "Connection":
			closing = closing || h1.ListHas(value, "close")
		}
		h1.Add(header, values, i, key, value)
	}
	if lengths > 1 || encodings > 1 || chunked == (lengths == 1) {
		return nil, false // two of a kind, both, or neither (a body until close)
	}
	if closing {
		delete(header, "Connection") // as net/http does: resp.Close says it
	}
	h1.FixPragma(header)
	if _, err := br.Discard(end + 4); err != nil {
		return nil, false
	}
	resp := &http.Response{Status: status, StatusCode: code, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: header, ContentLength: length, Close: closing, Request: req}
	switch {
	case chunked:
		resp.TransferEncoding = []string{"chunked"}
		resp.Body = &chunkedBody{r: httputil.NewChunkedReader(br), br: br, resp: resp}
	case length == 0:
		resp.Body = http.NoBody
	default:
		resp.Body = &lengthBody{br: br, left: length}
	}
	return resp, true
}

// peekHead returns br's buffered bytes and where in them the head's last CRLF starts (before the
// blank line), reading more while the buffer has room; end is -1 when no whole head fits or the
// connection ends first.
func peekHead(br *bufio.Reader) (b []byte, end int) {
	from := 0
	for {
		b, _ = br.Peek(br.Buffered())
		if i := bytes.Index(b[from:], []byte("\r\n\r\n")); i >= 0 {
			return b, from + i
		}
		if len(b) >= br.Size() {
			return b, -1
		}
		from = max(0, len(b)-3)
		if _, err := br.Peek(len(b) + 1); err != nil {
			return b, -1
		}
	}
}

// errShortAnswer says the child's answer ended before its Content-Length.
var errShortAnswer = fmt.Errorf("llama-server's answer ended before its Content-Length: %w", io.ErrUnexpectedEOF)

// lengthBody is a body of a known length.
type lengthBody struct {
	br   *bufio.Reader
	left int64
}

func (b *lengthBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.br.Read(p)
	b.left -= int64(n)
	switch {
	case b.left == 0:
		return n, io.EOF
	case err == io.EOF:
		return n, errShortAnswer
	}
	return n, err
}

func (b *lengthBody) Close() error { return nil }

// chunkedBody is a chunked body; past its last chunk it reads the trailer section into
// resp.Trailer, as net/http's body does.
type chunkedBody struct {
	r    io.Reader
	br   *bufio.Reader
	resp *http.Response
	err  error // the end: io.EOF once the trailers were read
}

func (b *chunkedBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.r.Read(p)
	if err == io.EOF {
		if err = b.readTrailer(); err == nil {
			err = io.EOF
		}
	} else if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		b.err = err
	}
	return n, err
}

// readTrailer reads the trailer section that ends a chunked body, as net/http's body does: one
// blank line mostly, else header lines through textproto, after making sure that the section ends
// within the buffer.
func (b *chunkedBody) readTrailer() error {
	if p, err := b.br.Peek(2); err == nil && p[0] == '\r' && p[1] == '\n' {
		_, _ = b.br.Discard(2)
		return nil
	}
	if !blankLineAhead(b.br) {
		return errors.New("llama-server's answer has a trailer that does not end")
	}
	hdr, err := textproto.NewReader(b.br).ReadMIMEHeader()
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return fmt.Errorf("reading the trailer of llama-server's answer: %w", err)
	}
	if b.resp.Trailer == nil {
		b.resp.Trailer = http.Header(hdr)
		return nil
	}
	for k, vv := range hdr {
		b.resp.Trailer[k] = vv
	}
	return nil
}

// blankLineAhead reports whether br's next bytes, within its buffer, hold CRLF CRLF.
func blankLineAhead(br *bufio.Reader) bool {
	for n := 4; ; n++ {
		p, err := br.Peek(n)
		if bytes.HasSuffix(p, []byte("\r\n\r\n")) {
			return true
		}
		if err != nil {
			return false
		}
	}
}

func (b *chunkedBody) Close() error { return nil }
