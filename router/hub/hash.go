package hub

import (
	"crypto/sha256"
	"hash"
)

// hashBufs and hashBufSize bound what the background hasher holds: 8 × 256 KiB.
const (
	hashBufs    = 8
	hashBufSize = 256 << 10
)

// asyncHash computes a sha256 on its own goroutine, so that hashing a download overlaps reading
// and writing it. Write copies the bytes and returns (it waits only when every buffer is still
// being hashed); Sum waits for the rest and ends the goroutine. Use it from one goroutine.
type asyncHash struct {
	h    hash.Hash
	todo chan []byte
	free chan []byte
	done chan struct{}
}

func newAsyncHash() *asyncHash {
	a := &asyncHash{h: sha256.New(), todo: make(chan []byte, hashBufs), free: make(chan []byte, hashBufs), done: make(chan struct{})}
	for range hashBufs {
		a.free <- make([]byte, 0, hashBufSize)
	}
	go func() {
		defer close(a.done)
		for b := range a.todo {
			a.h.Write(b)
			a.free <- b
		}
	}()
	return a
}

// Write queues p for hashing.
func (a *asyncHash) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		b := <-a.free
		k := min(len(p), cap(b))
		a.todo <- append(b[:0], p[:k]...)
		p = p[k:]
	}
	return n, nil
}

// Sum returns the sha256 of everything written and stops the goroutine.
func (a *asyncHash) Sum() []byte {
	a.stop()
	return a.h.Sum(nil)
}

// stop ends the goroutine; further Writes are not allowed. It may be called more than once.
func (a *asyncHash) stop() {
	select {
	case <-a.done:
		return
	default:
	}
	close(a.todo)
	<-a.done
}
