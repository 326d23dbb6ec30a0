package worker

import (
	"bufio"
	"context"
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

// FuzzAnswer gives the head arbitrary bytes as a worker's answer line, after TLS: the head never
// takes them for a worker's ok (a proof cannot be made without the token and this session's
// keying material), ends within its context, and its error shows no control or format character.
func FuzzAnswer(f *testing.F) {
	f.Add([]byte(`{"ok":true,"proof":"` + hex.EncodeToString(make([]byte, 32)) + `","info":{"name":"w"}}` + "\n"))
	f.Add([]byte(`{"ok":false,"code":"busy","error":"busy: serving \u001b[2J x\u202e"}` + "\n"))
	f.Add([]byte(`{"ok":false,"code":"bad-token"}` + "\n"))
	f.Add([]byte(strings.Repeat("[", 2*maxFrame)))
	f.Add([]byte("\x00\x01\x02"))
	f.Add([]byte{})
	cert, err := selfSigned("fuzz")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		head, wk := net.Pipe()
		defer head.Close()
		go func() {
			defer wk.Close()
			c := tls.Server(wk, serverTLS(cert))
			if c.Handshake() != nil {
				return
			}
			var req request
			if readLine(bufio.NewReaderSize(c, maxFrame), &req) != nil {
				return
			}
			c.Write(data)
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		l, err := handshake(ctx, head, testToken, opStatus, "fuzz")
		if err == nil {
			t.Fatalf("the head took %q for a worker's ok: %+v", data, l.info)
		}
		if ctx.Err() != nil {
			t.Fatalf("the head did not end within its context on %q: %v", data, err)
		}
		if strings.ContainsAny(err.Error(), "\x1b\u202e\x07") {
			t.Fatalf("the head's error shows the worker's escapes: %q", err)
		}
	})
}
