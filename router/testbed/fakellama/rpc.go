package main

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/llamatray/llamatray/router/internal/ggmlrpc"
)

// RPC devices (--rpc HOST:PORT,...): like llama-server, the fake connects to every rpc-server when
// it reads its arguments and aborts when one does not accept the connection; each server has one
// device, RPC0 (llama.cpp numbers a server's devices from 0), whose memory the server tells. On a
// simulated machine the fake puts layers on them as on the GPUs, names their buffers
// "RPC0[HOST:PORT]" in its buffer lines, and tells each server what it holds there. A server that
// goes away ends the fake (llama.cpp aborts on a failed RPC call). The servers are the fake
// rpc-server of router/testbed/fakerpc, whose line protocol this speaks.

// rpcTimeout bounds connecting to an rpc-server and each of its answers.
const rpcTimeout = 10 * time.Second

// rpcEnd is the connection to one rpc-server.
type rpcEnd struct {
	addr        string
	total, free int64 // its device's memory when connected
	conn        net.Conn
	answers     chan string // the server's answer lines; closed when the connection ends

	mu sync.Mutex // guards the exchanges on conn: one request and its answer at a time
}

// dialRPC connects to the rpc-server at addr and asks for its memory; lost, when set, is called
// (once, on the reading goroutine) when the connection ends.
func dialRPC(addr string, lost func(err error)) (*rpcEnd, error) {
	c, err := net.DialTimeout("tcp", addr, rpcTimeout)
	if err != nil {
		return nil, err
	}
	// llama.cpp's HELLO first, as llama-server opens every RPC connection.
	c.SetDeadline(time.Now().Add(rpcTimeout))
	if _, err := c.Write(ggmlrpc.Hello()); err != nil {
		c.Close()
		return nil, err
	}
	if _, err := ggmlrpc.ReadAnswer(c); err != nil {
		c.Close()
		return nil, fmt.Errorf("no answer to HELLO: %w", err)
	}
	c.SetDeadline(time.Time{})
	e := &rpcEnd{addr: addr, conn: c, answers: make(chan string, 1)}
	go func() {
		sc := bufio.NewScanner(c)
		for sc.Scan() {
			e.answers <- sc.Text()
		}
		err := sc.Err()
		if err == nil {
			err = fmt.Errorf("connection closed by the server")
		}
		close(e.answers)
		if lost != nil {
			lost(err)
		}
	}()
	if _, err := e.call(fmt.Sprintf("hello %d", os.Getpid())); err != nil {
		c.Close()
		return nil, err
	}
	a, err := e.call("mem")
	if err == nil {
		f := strings.Fields(a)
		if len(f) != 2 {
			err = fmt.Errorf("bad memory answer %q", a)
		} else if e.total, err = strconv.ParseInt(f[0], 10, 64); err == nil {
			e.free, err = strconv.ParseInt(f[1], 10, 64)
		}
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	return e, nil
}

// call sends one request line and returns the answer.
func (e *rpcEnd) call(line string) (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.conn.SetWriteDeadline(time.Now().Add(rpcTimeout))
	if _, err := fmt.Fprintln(e.conn, line); err != nil {
		return "", err
	}
	select {
	case a, ok := <-e.answers:
		if !ok {
			return "", fmt.Errorf("connection closed by the server")
		}
		if strings.HasPrefix(a, "error") {
			return "", fmt.Errorf("%s", a)
		}
		return a, nil
	case <-time.After(rpcTimeout):
		return "", fmt.Errorf("no answer within %s", rpcTimeout)
	}
}

// hold tells the server what the fake holds on its device now.
func (e *rpcEnd) hold(n int64) error {
	_, err := e.call("hold " + strconv.FormatInt(n, 10))
	return err
}

// device is the end's device as its buffer lines name it.
func (e *rpcEnd) device() string { return "RPC0[" + e.addr + "]" }

// connectRPC connects to every --rpc server, in order, or prints llama.cpp's error and exits 1.
// lost is called when a connection ends (nil: never, for --list-devices).
func connectRPC(ends []string, lost func(addr string, err error)) []*rpcEnd {
	var out []*rpcEnd
	for _, addr := range ends {
		var onLost func(error)
		if lost != nil {
			onLost = func(err error) { lost(addr, err) }
		}
		e, err := dialRPC(addr, onLost)
		if err != nil {
			rawLog("failed to connect to %s: %v", addr, err)
			rawLog("error: failed to register RPC server %s", addr)
			os.Exit(1)
		}
		out = append(out, e)
	}
	return out
}

// rpcLost is what the fake does when an rpc-server goes away: llama.cpp's abort.
func (s *server) rpcLost(addr string, err error) {
	if s.exiting.Load() {
		return
	}
	logf(lvlError, "ggml_backend_rpc: failed to communicate with RPC server %s: %v", addr, err)
	rawLog("GGML_ASSERT(status) failed")
	s.exit(134)
}
