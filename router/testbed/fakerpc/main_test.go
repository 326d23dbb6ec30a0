package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/internal/ggmlrpc"
	"github.com/llamatray/llamatray/router/testbed"
)

func TestServe(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state.json")
	s := &server{total: 1 << 30, state: state, clients: map[net.Conn]*client{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go s.serve(c)
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	// llama.cpp's HELLO first, as to the real rpc-server; then the line protocol.
	if _, err := c.Write(ggmlrpc.Hello()); err != nil {
		t.Fatal(err)
	}
	if _, err := ggmlrpc.ReadAnswer(c); err != nil {
		t.Fatalf("HELLO: %v", err)
	}
	r := bufio.NewScanner(c)
	ask := func(line string) string {
		fmt.Fprintln(c, line)
		if !r.Scan() {
			t.Fatalf("no answer to %q", line)
		}
		return r.Text()
	}
	read := func() State {
		var st State
		b, _ := os.ReadFile(state)
		json.Unmarshal(b, &st)
		return st
	}
	if a := ask("hello 42"); a != "ok" {
		t.Fatalf("hello: %q", a)
	}
	if a := ask("hold 1000"); a != "ok" {
		t.Fatalf("hold: %q", a)
	}
	if a := ask("mem"); a != fmt.Sprint(1<<30, " ", 1<<30-1000) {
		t.Fatalf("mem: %q", a)
	}
	if st := read(); st.Held != 1000 || st.Clients["42"] != 1000 {
		t.Fatalf("state %+v", st)
	}
	if a := ask("hold -1"); a[:5] != "error" {
		t.Fatalf("hold -1: %q", a)
	}
	c.Close() // a client's holding ends with its connection
	// The server's goroutine sees the close on its own time.
	testbed.WaitFor(t, 5*time.Second, "the hold to end with the client's connection", func() bool { return read().Held == 0 })
}
