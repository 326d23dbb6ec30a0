// Package ggmlrpc is the little of llama.cpp's RPC protocol (ggml-rpc) that Llamatray speaks
// itself: the HELLO that opens every connection to an rpc-server. A message is one command byte,
// then the payload's size (uint64, little-endian), then the payload; an answer is the size and
// the payload. The first message of a connection must be HELLO: the rpc-server closes one that
// starts otherwise, and answers nothing else before it.
package ggmlrpc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

const (
	// CmdHello is RPC_CMD_HELLO.
	CmdHello = 14
	// HelloSize is the size of the HELLO request's payload (rpc_msg_hello_req of protocol 8.x:
	// zeros ask for no transport but TCP).
	HelloSize = 24
	// maxHello bounds a HELLO payload or answer read here: they are tens of bytes.
	maxHello = 256
)

// Hello is a HELLO request: no transport but TCP asked for.
func Hello() []byte {
	b := make([]byte, 1+8+HelloSize)
	b[0] = CmdHello
	binary.LittleEndian.PutUint64(b[1:], HelloSize)
	return b
}

// ReadHello reads one HELLO request from r (the command byte first) and returns it whole.
func ReadHello(r io.Reader) ([]byte, error) {
	var head [9]byte
	if _, err := io.ReadFull(r, head[:1]); err != nil {
		return nil, err
	}
	if head[0] != CmdHello {
		return nil, fmt.Errorf("first RPC command %d is not HELLO", head[0])
	}
	return readSized(r, head[:], 1)
}

// ReadAnswer reads one answer (its size, then the payload) from r and returns it whole.
func ReadAnswer(r io.Reader) ([]byte, error) {
	var head [8]byte
	return readSized(r, head[:], 0)
}

// readSized reads the size at head[at:at+8], then that many bytes, and returns head and them.
func readSized(r io.Reader, head []byte, at int) ([]byte, error) {
	if _, err := io.ReadFull(r, head[at:at+8]); err != nil {
		return nil, err
	}
	n := binary.LittleEndian.Uint64(head[at:])
	if n > maxHello {
		return nil, fmt.Errorf("HELLO of %d bytes (at most %d)", n, maxHello)
	}
	out := append([]byte{}, head[:at+8]...)
	out = append(out, make([]byte, n)...)
	if _, err := io.ReadFull(r, out[at+8:]); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return out, nil
}

// CanStart says whether b can be the first byte of an RPC connection (HELLO): an HTTP method, a
// TLS record or a line of text cannot.
func CanStart(b byte) bool { return b == CmdHello }

// Answer is an answer frame with payload p (the fakes' HELLO answer).
func Answer(p []byte) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(p)))
	return append(b, p...)
}
