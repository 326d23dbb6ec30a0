package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// answerSeeds are answers llama-server sends and odd ones around them.
var answerSeeds = []string{
	"HTTP/1.1 200 OK\r\nServer: llama.cpp\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: 2\r\nKeep-Alive: timeout=5, max=100\r\n\r\n{}",
	"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n6\r\ndata: \r\n3\r\nx\n\n\r\n0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\nX-Tail: 1\r\n\r\n",
	"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 5\r\nConnection: close\r\n\r\nbusy!",
	"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 200\r\nContent-Length: 1\r\n\r\nx",
	"HTTP/1.1 200 \r\nContent-Length: 1\r\n\r\nx",
	"HTTP/1.1 200 OK\r\nPragma: no-cache\r\nContent-Length: 1\r\n\r\nx",
	"HTTP/1.1 200 OK\r\nA: 1\r\nA: 2\r\nContent-Length: 3\r\n\r\nabc",
	"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab",
	"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx",
	"HTTP/1.1 204 No Content\r\n\r\n",
	"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx",
	"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nTrailer: X-Tail\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX-Tail: 1\r\n\r\n",
	"HTTP/1.1 200 OK\r\n\r\nuntil close",
	"HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\nx",
	"HTTP/1.1 200 OK\nContent-Length: 1\n\nx",
	"HTTP/1.1 200 OK\r\n Folded: x\r\nContent-Length: 1\r\n\r\nx",
	"HTTP/1.1 200 OK\r\nContent-Length: +1\r\n\r\nx",
	"HTTP/1.1 200 OK\r\nX-Odd: caf\xc3\xa9\r\nContent-Length: 1\r\n\r\nx",
	"HTTP/1.1 200 OK\r\nx-lower-case: v\r\nconnection: Keep-Alive, close\r\nContent-Length: 1\r\n\r\nx",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
	"HTTP/1.1 2000 OK\r\nContent-Length: 1\r\n\r\nx",
}

// readBoth reads raw as readAnswer does and as http.ReadResponse does, each with its body to its
// end, and describes what each got.
func readBoth(raw, method string) (ours, theirs string, parsed bool) {
	req, _ := http.NewRequest(method, "http://child/v1/chat/completions", nil)
	describe := func(read func(*bufio.Reader, *http.Request) (*http.Response, error)) string {
		br := bufio.NewReaderSize(strings.NewReader(raw), 4096)
		resp, err := read(br, req)
		if err != nil {
			return "error"
		}
		body, berr := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		rest := ""
		if berr == nil {
			b, _ := io.ReadAll(br)
			rest = string(b)
		}
		return fmt.Sprintf("%q %q %d len=%d close=%v te=%q header=%q body=%q bodyErr=%v trailer=%q rest=%q",
			resp.Status, resp.Proto, resp.StatusCode, resp.ContentLength, resp.Close, resp.TransferEncoding,
			resp.Header, body, berr != nil, resp.Trailer, rest)
	}
	_, parsed = parseAnswer(bufio.NewReaderSize(strings.NewReader(raw), 4096), req)
	return describe(readAnswer), describe(http.ReadResponse), parsed
}

// TestReadAnswerAsNetHTTP: every seed reads the same through readAnswer as through
// http.ReadResponse; llama-server's own answers are read by readAnswer itself.
func TestReadAnswerAsNetHTTP(t *testing.T) {
	for i, raw := range answerSeeds {
		for _, method := range []string{http.MethodPost, http.MethodHead} {
			ours, theirs, parsed := readBoth(raw, method)
			if ours != theirs {
				t.Errorf("seed %d (%s) %q:\n ours   %s\n theirs %s", i, method, raw, ours, theirs)
			}
			if i < 5 && method == http.MethodPost && !parsed {
				t.Errorf("seed %d, an answer llama-server sends, went to net/http", i)
			}
		}
	}
}

// FuzzReadAnswer: whatever the bytes, readAnswer reads them as http.ReadResponse does.
func FuzzReadAnswer(f *testing.F) {
	for _, s := range answerSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if ours, theirs, _ := readBoth(raw, http.MethodPost); ours != theirs {
			t.Fatalf("%q:\n ours   %s\n theirs %s", raw, ours, theirs)
		}
	})
}
