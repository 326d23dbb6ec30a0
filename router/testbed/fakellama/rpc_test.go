package main

import (
	"bufio"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/llamatray/llamatray/router/internal/ggmlrpc"
	"github.com/llamatray/llamatray/router/testbed"
)

func TestParseArgsRPC(t *testing.T) {
	o, err := parseArgs([]string{"--rpc", "127.0.0.1:1,127.0.0.1:2", "--list-devices", "--rpc", "not an end"})
	if err != nil || !o.listDevs || !slices.Equal(o.rpc, []string{"127.0.0.1:1", "127.0.0.1:2"}) {
		t.Fatalf("--rpc before --list-devices: %+v, %v", o, err)
	}
	if o, err := parseArgs([]string{"--list-devices", "--rpc", "127.0.0.1:1"}); err != nil || len(o.rpc) != 0 {
		t.Fatalf("--rpc after --list-devices is never read: %+v, %v", o, err)
	}
	if _, err := parseArgs([]string{"-m", "x", "--rpc", "nohost"}); err == nil {
		t.Fatal("a bad --rpc end was taken")
	}
}

// TestDialRPC talks to an in-test server speaking fakerpc's protocol and sees the fake's hold.
func TestDialRPC(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan string, 8)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		if _, err := ggmlrpc.ReadHello(c); err != nil {
			got <- "no HELLO: " + err.Error()
			return
		}
		c.Write(ggmlrpc.Answer(testbed.FakeHelloAnswer))
		sc := bufio.NewScanner(c)
		for sc.Scan() {
			got <- sc.Text()
			answer := "ok"
			if sc.Text() == "mem" {
				answer = fmt.Sprint(8<<30, " ", 6<<30)
			}
			fmt.Fprintln(c, answer)
		}
	}()
	lost := make(chan error, 1)
	e, err := dialRPC(ln.Addr().String(), func(err error) { lost <- err })
	if err != nil {
		t.Fatal(err)
	}
	if e.total != 8<<30 || e.free != 6<<30 || e.device() != "RPC0["+ln.Addr().String()+"]" {
		t.Fatalf("end %+v", e)
	}
	if err := e.hold(123); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"hello ", "mem", "hold 123"} {
		if l := <-got; !strings.HasPrefix(l, want) {
			t.Fatalf("server got %q, want %q", l, want)
		}
	}
	ln.Close()
	e.conn.Close()
	if err := <-lost; err == nil {
		t.Fatal("lost without an error")
	}
	if _, err := dialRPC(ln.Addr().String(), nil); err == nil {
		t.Fatal("dialed a closed server")
	}
}
