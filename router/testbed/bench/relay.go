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
)

// relayKind is the floor process's third argument for the hand-written relay.
const relayKind = "relay"

// runRelay is the least a Go proxy hop can cost: a hand-written HTTP/1.1 keep-alive relay
// (bufio and sockets, no net/http) in front of target. Each client connection is one goroutine
// that reads a request head and its Content-Length body, writes both to a pooled connection to
// target in one write, and copies the answer back (Content-Length in one write, chunked chunk by
// chunk). It does nothing else: no routing, leases, auth, logs, limits or checks of what it
// relays, so it is for the benchmark's own requests only. It serves until killed.
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
		go p.serve(c)
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

func (p *relayPool) get() (*relayConn, error) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		u := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return u, nil
	}
	p.mu.Unlock()
	c, err := net.Dial("tcp", p.addr)
	if err != nil {
		return nil, err
	}
	return &relayConn{c: c, r: bufio.NewReaderSize(c, 16<<10)}, nil
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
		up, err := p.get()
		if err != nil {
			return
		}
		keep, err := relayOne(c, up, in.Bytes(), &out)
		if err != nil || !keep {
			up.c.Close()
		} else {
			p.put(up)
		}
		if err != nil {
			return
		}
	}
}

// relayOne sends req on up and copies the answer to c; keep says whether up may be used again.
func relayOne(c net.Conn, up *relayConn, req []byte, out *bytes.Buffer) (keep bool, err error) {
	if _, err := up.c.Write(req); err != nil {
		return false, err
	}
	out.Reset()
	h, err := readHead(up.r, out)
	if err != nil {
		return false, err
	}
	switch {
	case h.length >= 0:
		if _, err := io.CopyN(out, up.r, h.length); err != nil {
			return false, err
		}
		_, err = c.Write(out.Bytes())
		return !h.closeConn && err == nil, err
	case h.chunked:
		if _, err := c.Write(out.Bytes()); err != nil {
			return false, err
		}
		for {
			out.Reset()
			line, err := up.r.ReadSlice('\n')
			if err != nil {
				return false, err
			}
			out.Write(line)
			size, err := strconv.ParseInt(strings.TrimSpace(string(line)), 16, 64)
			if err != nil || size < 0 {
				return false, fmt.Errorf("bad chunk size %q", line)
			}
			if _, err := io.CopyN(out, up.r, size+2); err != nil { // the data and its CRLF
				return false, err
			}
			if _, err := c.Write(out.Bytes()); err != nil {
				return false, err
			}
			if size == 0 {
				return !h.closeConn, nil
			}
		}
	default:
		return false, errors.New("an answer with neither Content-Length nor chunked")
	}
}
