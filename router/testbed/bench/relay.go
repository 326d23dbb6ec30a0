package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/llamatray/llamatray/router/internal/rawio"
)

// relayKind is the floor process's third argument for the hand-written relay.
const relayKind = "relay"

// runRelay is the least a Go proxy hop can cost: a hand-written HTTP/1.1 keep-alive relay
// (bufio and sockets, no net/http) in front of target. Each client connection is one goroutine
// that reads a request head and its Content-Length body, writes both to a pooled connection to
// target in one write, and copies the answer back (Content-Length in one write, chunked chunk by
// chunk). As Llamatray's upstream does, it closes a stream's connection (llama-server closes it
// anyway), sends a request again once on a new connection when a kept one was closed before any
// of its answer came, and reads and writes its sockets with raw system calls (router/internal/rawio).
// It does nothing else: no routing, leases, auth, logs, limits or checks of what it relays, so it
// is for the benchmark's own requests only. It serves until killed.
func runRelay(listen, target string) error {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("relay: %w", err)
	}
	fmt.Println(floorReady)
	return relay(ln, target)
}

// relay serves ln until it is closed.
func relay(ln net.Listener, target string) error {
	u, err := url.Parse(target)
	if err != nil {
		return fmt.Errorf("relay target: %w", err)
	}
	p := &relayPool{addr: u.Host}
	for {
		c, err := ln.Accept()
		if err != nil {
			return fmt.Errorf("relay: %w", err)
		}
		go p.serve(rawio.Wrap(c))
	}
}

// relayPool keeps the relay's idle connections to its target.
type relayPool struct {
	addr string
	mu   sync.Mutex // guards idle
	idle []*relayConn
}

type relayConn struct {
	c net.Conn
	r *bufio.Reader
}

// get is a kept connection (reused) or a new one.
func (p *relayPool) get() (*relayConn, bool, error) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		u := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return u, true, nil
	}
	p.mu.Unlock()
	return p.dial()
}

func (p *relayPool) dial() (*relayConn, bool, error) {
	c, err := net.Dial("tcp", p.addr)
	if err != nil {
		return nil, false, err
	}
	c = rawio.Wrap(c)
	return &relayConn{c: c, r: bufio.NewReaderSize(c, 16<<10)}, false, nil
}

func (p *relayPool) put(u *relayConn) {
	p.mu.Lock()
	p.idle = append(p.idle, u)
	p.mu.Unlock()
}

// head is what the relay reads of a message head.
type head struct {
	length    int64 // Content-Length, -1 when none
	chunked   bool
	closeConn bool // Connection: close
}

// readHead appends a message head from r to buf and says what it read.
func readHead(r *bufio.Reader, buf *bytes.Buffer) (head, error) {
	h := head{length: -1}
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return h, err
		}
		buf.Write(line)
		if len(bytes.TrimRight(line, "\r\n")) == 0 {
			return h, nil
		}
		k, v, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue // the request or status line
		}
		val := strings.TrimSpace(string(v))
		switch strings.ToLower(string(k)) {
		case "content-length":
			if h.length, err = strconv.ParseInt(val, 10, 64); err != nil || h.length < 0 {
				return h, fmt.Errorf("bad Content-Length %q", val)
			}
		case "transfer-encoding":
			h.chunked = strings.EqualFold(val, "chunked")
		case "connection":
			h.closeConn = strings.EqualFold(val, "close")
		}
	}
}

func (p *relayPool) serve(c net.Conn) {
	defer c.Close()
	r := bufio.NewReaderSize(c, 4<<10)
	var in, out bytes.Buffer
	for {
		in.Reset()
		h, err := readHead(r, &in)
		if err != nil || h.chunked {
			return // the benchmark sends Content-Length bodies
		}
		if h.length > 0 {
			if _, err := io.CopyN(&in, r, h.length); err != nil {
				return
			}
		}
		if err := p.relay(c, in.Bytes(), &out); err != nil {
			return
		}
	}
}

// relay sends one request and copies its answer, on a kept connection or a new one.
func (p *relayPool) relay(c net.Conn, req []byte, out *bytes.Buffer) error {
	up, reused, err := p.get()
	for {
		if err != nil {
			return err
		}
		keep, began, err := relayOne(c, up, req, out)
		if err == nil && keep {
			p.put(up)
			return nil
		}
		up.c.Close()
		if err == nil || began || !reused {
			return err
		}
		up, reused, err = p.dial() // a kept connection the target had closed: once more, new
	}
}

// relayOne sends req on up and copies the answer to c. keep: up may be used again; began: some
// of the answer came from up (so the request cannot be sent again).
func relayOne(c net.Conn, up *relayConn, req []byte, out *bytes.Buffer) (keep, began bool, err error) {
	if _, err := up.c.Write(req); err != nil {
		return false, false, err
	}
	out.Reset()
	if _, err := up.r.Peek(1); err != nil {
		return false, false, err
	}
	h, err := readHead(up.r, out)
	if err != nil {
		return false, true, err
	}
	switch {
	case h.length >= 0:
		if _, err := io.CopyN(out, up.r, h.length); err != nil {
			return false, true, err
		}
		_, err = c.Write(out.Bytes())
		return !h.closeConn && err == nil, true, err
	case h.chunked:
		if _, err := c.Write(out.Bytes()); err != nil {
			return false, true, err
		}
		for {
			out.Reset()
			line, err := up.r.ReadSlice('\n')
			if err != nil {
				return false, true, err
			}
			out.Write(line)
			size, err := strconv.ParseInt(strings.TrimSpace(string(line)), 16, 64)
			if err != nil || size < 0 {
				return false, true, fmt.Errorf("bad chunk size %q", line)
			}
			if _, err := io.CopyN(out, up.r, size+2); err != nil { // the data and its CRLF
				return false, true, err
			}
			if _, err := c.Write(out.Bytes()); err != nil {
				return false, true, err
			}
			if size == 0 {
				return false, true, nil // llama-server closes a stream's connection
			}
		}
	default:
		return false, true, errors.New("an answer with neither Content-Length nor chunked")
	}
}
