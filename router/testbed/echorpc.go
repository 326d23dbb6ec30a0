package testbed

import (
	"flag"
	"fmt"
	"io"
	"net"
	"os"

	"github.com/llamatray/llamatray/router/internal/ggmlrpc"
)

// FakeHelloAnswer is the fakes' answer to HELLO: protocol 8.0.0 and no transport but TCP.
var FakeHelloAnswer = []byte{8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}

// EchoRPCServer stands in for llama.cpp's rpc-server in tests of the worker link: it takes the
// rpc-server's command line (-H HOST -p PORT [-t N]), listens there, says so on stdout, and serves
// each connection, one at a time as the real one does: its HELLO answered (FakeHelloAnswer), and
// then what it sends echoed back. Like the real one it says on stderr when it accepts and closes one. It returns the
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
		fmt.Fprintln(os.Stderr, "Accepted client connection")
		if _, err := ggmlrpc.ReadHello(c); err == nil {
			if _, err := c.Write(ggmlrpc.Answer(FakeHelloAnswer)); err == nil {
				io.Copy(c, c)
			}
		}
		c.Close()
		fmt.Fprintln(os.Stderr, "Client connection closed")
	}
}
