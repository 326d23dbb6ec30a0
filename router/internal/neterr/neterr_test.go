package neterr

import (
	"errors"
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

	ln, err = net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
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
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = c.Read(make([]byte, 1))
	if !Reset(err) {
		t.Fatalf("read after the other end reset: %v, want reset", err)
	}
}
