// Command fakerpc is a fake llama.cpp rpc-server for the simulated machines with workers
// (router/testbed/chaos -sim): the process router/worker starts as its rpc-server, with the same
// command line (-H 127.0.0.1 -p PORT [-t N]). It has one device of FAKE_RPC_MIB MiB and speaks a
// line protocol, after llama.cpp's HELLO, with the fake llama-server (router/testbed/fakellama), which reaches it through the
// worker's link:
//
//	hello PID      → ok            the client is llama-server process PID
//	mem            → TOTAL FREE    the device's memory, in bytes
//	hold BYTES     → ok            what this client holds on the device now (0 frees it)
//
// A client's holding ends with its connection, as llama.cpp's rpc-server frees a client's buffers.
// A hold over the free memory is taken all the same (the simulation checks budgets; it does not
// enforce them). After every change it writes what is held to FAKE_RPC_STATE (JSON, replaced
// whole): {"total":..., "held":..., "clients":{"PID":BYTES,...}}.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/llamatray/llamatray/router/internal/ggmlrpc"
	"github.com/llamatray/llamatray/router/testbed"
)

// State is what FAKE_RPC_STATE holds.
type State struct {
	Total   int64            `json:"total"`
	Held    int64            `json:"held"`
	Clients map[string]int64 `json:"clients"` // pid → bytes held, clients holding something
}

type server struct {
	total int64
	state string

	mu      sync.Mutex           // guards clients and seq
	clients map[net.Conn]*client // open connections
	seq     int64                // changes so far

	wmu     sync.Mutex // guards written and the state file's writes
	written int64      // the seq of the snapshot in the state file
}

type client struct {
	pid  string
	held int64
}

func main() {
	fs := flag.NewFlagSet("rpc-server", flag.ContinueOnError)
	host := fs.String("H", "127.0.0.1", "host to bind to")
	port := fs.Int("p", 50052, "port to bind to")
	fs.Int("t", 1, "threads of the CPU device")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	mib, err := strconv.ParseInt(os.Getenv("FAKE_RPC_MIB"), 10, 64)
	if err != nil || mib <= 0 {
		fmt.Fprintln(os.Stderr, "fakerpc: FAKE_RPC_MIB must be the device's MiB")
		os.Exit(2)
	}
	s := &server{total: mib << 20, state: os.Getenv("FAKE_RPC_STATE"), clients: map[net.Conn]*client{}}
	ln, err := net.Listen("tcp", net.JoinHostPort(*host, strconv.Itoa(*port)))
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakerpc:", err)
		os.Exit(1)
	}
	s.write()
	fmt.Printf("Starting RPC server\n  endpoint       : %s\n  devices        : RPC0 (%d MiB)\n", ln.Addr(), mib)
	for {
		c, err := ln.Accept()
		if err != nil {
			fmt.Fprintln(os.Stderr, "fakerpc:", err)
			os.Exit(1)
		}
		go s.serve(c)
	}
}

// serve answers one client until its connection ends, then frees what it held.
func (s *server) serve(c net.Conn) {
	defer c.Close()
	cl := &client{}
	s.mu.Lock()
	s.clients[c] = cl
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.clients, c)
		s.mu.Unlock()
		s.write()
	}()
	// llama.cpp's HELLO first, as the real one wants it.
	if _, err := ggmlrpc.ReadHello(c); err != nil {
		return
	}
	if _, err := c.Write(ggmlrpc.Answer(testbed.FakeHelloAnswer)); err != nil {
		return
	}
	sc := bufio.NewScanner(c)
	for sc.Scan() {
		verb, arg, _ := strings.Cut(strings.TrimSpace(sc.Text()), " ")
		answer := "ok"
		switch verb {
		case "hello":
			s.mu.Lock()
			cl.pid = arg
			s.mu.Unlock()
		case "mem":
			s.mu.Lock()
			answer = fmt.Sprintf("%d %d", s.total, max(s.total-s.heldLocked(), 0))
			s.mu.Unlock()
		case "hold":
			n, err := strconv.ParseInt(arg, 10, 64)
			if err != nil || n < 0 {
				answer = "error: bad size " + strconv.Quote(arg)
				break
			}
			s.mu.Lock()
			cl.held = n
			s.mu.Unlock()
			s.write()
		default:
			answer = "error: unknown command " + strconv.Quote(verb)
		}
		if _, err := fmt.Fprintln(c, answer); err != nil {
			return
		}
	}
}

func (s *server) heldLocked() int64 {
	var n int64
	for _, cl := range s.clients {
		n += cl.held
	}
	return n
}

// write replaces the state file with a snapshot taken now (a rename, so a reader never sees half
// of one); a snapshot older than the one written is dropped.
func (s *server) write() {
	if s.state == "" {
		return
	}
	s.mu.Lock()
	s.seq++
	seq := s.seq
	st := State{Total: s.total, Held: s.heldLocked(), Clients: map[string]int64{}}
	for _, cl := range s.clients {
		if cl.held > 0 {
			st.Clients[cl.pid] += cl.held
		}
	}
	s.mu.Unlock()
	b, _ := json.Marshal(st)
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if seq < s.written {
		return
	}
	s.written = seq
	tmp := filepath.Join(filepath.Dir(s.state), "."+filepath.Base(s.state)+".tmp")
	if err := os.WriteFile(tmp, b, 0o644); err == nil {
		os.Rename(tmp, s.state)
	}
}
