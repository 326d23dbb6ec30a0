package testbed

import (
	"flag"
	"fmt"
	"io"
	"net"
)

// EchoRPCServer stands in for llama.cpp's rpc-server in tests of the worker link: it takes the
// rpc-server's command line (-H HOST -p PORT [-t N]), listens there, says so on stdout, and echoes
// each connection back, one at a time, as the real one serves one client at a time. It returns the
// process's exit code (it runs until killed, or 1 when it cannot listen, 2 for a bad command line).
func EchoRPCServer(args []string) int {
	fs := flag.NewFlagSet("fake-rpc", flag.ContinueOnError)
	host, port := fs.String("H", "127.0.0.1", ""), fs.Int("p", 50052, "")
	fs.Int("t", 1, "")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(*host, fmt.Sprint(*port)))
	if err != nil {
		fmt.Println(err)
		return 1
	}
	fmt.Println("fake rpc-server listening on", ln.Addr())
	for {
		c, err := ln.Accept()
		if err != nil {
			return 1
		}
		io.Copy(c, c)
		c.Close()
	}
}
