package engine

import (
	"testing"
)

// BenchmarkLease is a request's lease on a loaded model and its release: the engine's share of
// every proxied request (with two other models loaded and idle beside it).
func BenchmarkLease(b *testing.B) {
	s := newSync(b, nil, syncModel{id: "a", ramMiB: 30}, syncModel{id: "b", ramMiB: 30}, syncModel{id: "c", ramMiB: 30})
	s.load("a")
	s.load("b")
	s.load("c")
	ch, cancel := s.e.Subscribe()
	defer cancel()
	go func() {
		for range ch {
		}
	}()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		w := s.e.request("a")
		l, err := s.e.finish(w, <-w.ch)
		if err != nil {
			b.Fatal(err)
		}
		l.Release()
	}
}
