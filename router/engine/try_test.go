package engine

import (
	"errors"
	"testing"
)

// TryAcquireID answers at once what needs no wait, a lease on a loaded model or an error, and
// leaves the rest to AcquireID without queueing anything or starting a load.
func TestTryAcquireID(t *testing.T) {
	s := newSync(t, nil, syncModel{id: "a", ramMiB: 50}, syncModel{id: "b", ramMiB: 50})
	s.load("a")
	l, answered, err := s.e.TryAcquireID("a")
	if !answered || err != nil || l == nil || l.URL == nil {
		t.Fatalf("a, loaded: %v %v %v; want a lease at once", l, answered, err)
	}
	if st := s.state("a"); st.Active != 1 {
		t.Fatalf("a has %d leases, want 1", st.Active)
	}
	l.Release()
	l.Release() // twice: once counted
	if st := s.state("a"); st.Active != 0 {
		t.Fatalf("a has %d leases after the release, want 0", st.Active)
	}

	l, answered, err = s.e.TryAcquireID("b")
	if answered || l != nil || err != nil {
		t.Fatalf("b, not loaded: %v %v %v; want no answer", l, answered, err)
	}
	if st := s.state("b"); st.Queued != 0 || st.State != StateUnloaded {
		t.Fatalf("b after TryAcquireID: %d queued, %s; want nothing queued and no load", st.Queued, st.State)
	}
	s.fx.mu.Lock()
	spawned := len(s.fx.procs)
	s.fx.mu.Unlock()
	if spawned != 1 {
		t.Fatalf("%d children started, want only a's", spawned)
	}

	if _, answered, _ := s.e.TryAcquireID("nope"); answered {
		t.Fatal("an unknown model was answered at once; AcquireID syncs the catalog first")
	}
	s.e.mu.Lock()
	s.e.o.Binary = ""
	s.e.mu.Unlock()
	if _, answered, err := s.e.TryAcquireID("b"); !answered || !errors.As(err, new(*NoServerError)) {
		t.Fatalf("without llama-server: %v %v; want NoServerError at once", answered, err)
	}
}
