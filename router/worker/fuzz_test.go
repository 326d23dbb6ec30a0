package worker

import (
	"bufio"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// FuzzRequestLine sends arbitrary bytes as the head's request line, after TLS: the worker never
// answers ok (a proof cannot be made without the token and this session's keying material),
// always answers or closes within its deadlines, and still serves a real head afterwards.
func FuzzRequestLine(f *testing.F) {
	f.Add([]byte(`{"link":"llamatray-link/1","proof":"` + hex.EncodeToString(make([]byte, 32)) + `","op":"rpc","head":"x"}` + "\n"))
	f.Add([]byte(`{"link":"llamatray-link/1","proof":"zz","op":"status"}` + "\n"))
	f.Add([]byte(`{"link":"llamatray-link/2"}` + "\n"))
	f.Add([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
	f.Add([]byte(strings.Repeat("{", 2*maxFrame)))
	f.Add([]byte{})
	w := startWorker(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		raw, err := net.Dial("tcp", w.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer raw.Close()
		raw.SetDeadline(time.Now().Add(handshakeTimeout + answerTimeout + 5*time.Second))
		c := tls.Client(raw, clientTLS())
		if err := c.Handshake(); err != nil {
			t.Fatalf("TLS handshake: %v", err)
		}
		c.Write(data)
		c.CloseWrite()
		var a answer
		err = readLine(bufio.NewReaderSize(c, maxFrame), &a)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("the worker neither answered nor closed %q", data)
		}
		if err == nil && a.OK {
			t.Fatalf("the worker accepted %q: %+v", data, a)
		}
		if err == nil {
			// After its answer the worker closes.
			if _, err := io.Copy(io.Discard, c); err != nil && errors.As(err, &ne) && ne.Timeout() {
				t.Fatalf("the worker kept the connection open after refusing %q", data)
			}
		}
	})
}

func TestFuzzSeedsLeaveTheWorkerServing(t *testing.T) {
	w := startWorker(t)
	for _, data := range []string{"garbage\n", strings.Repeat("x", 3*maxFrame), `{"link":"llamatray-link/1","op":"rpc"}` + "\n"} {
		c, err := tls.Dial("tcp", w.addr, clientTLS())
		if err != nil {
			t.Fatal(err)
		}
		c.Write([]byte(data))
		c.CloseWrite()
		io.Copy(io.Discard, c)
		c.Close()
	}
	if _, err := Check(ctxT(t, 5*time.Second), w.addr, testToken); err != nil {
		t.Fatalf("Check after hostile requests: %v", err)
	}
}
