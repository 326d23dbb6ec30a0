package neterr

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// A port nothing listens on refuses; a connection closed with unread data is reset.
func TestRefusedAndReset(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, err = net.DialTimeout("tcp", addr, 5*time.Second)
	if !Refused(err) || Reset(err) {
		t.Fatalf("dial of a closed port: %v (refused %v, reset %v)", err, Refused(err), Reset(err))
	}
	if Refused(errors.New("other")) || Reset(nil) {
		t.Fatal("other errors taken for refused or reset")
	}

	// Wine reports a reset as the end of the stream now and then (about one read in ten when it
	// comes while the read is pending, one in a few hundred when it came before), so the end of
	// the stream is tried again, a few times; any other error must be a reset.
	const tries = 5
	for i := 1; ; i++ {
		err := readAfterReset(t)
		if Reset(err) {
			return
		}
		if !errors.Is(err, io.EOF) || i == tries {
			t.Fatalf("read after the other end reset (try %d of %d): %v, want reset", i, tries, err)
		}
		t.Logf("try %d: the end of the stream instead of a reset", i)
	}
}

// readAfterReset connects, has the other end close with a reset once the connection carried a
// byte, and returns what a read gets then.
func readAfterReset(t *testing.T) error {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		c.Read(make([]byte, 1))       // the client is connected and has written
		c.(*net.TCPConn).SetLinger(0) // close with RST
		c.Close()
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	<-closed // read once the reset is sent, which Wine gets right more often
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = c.Read(make([]byte, 1))
	return err
}
