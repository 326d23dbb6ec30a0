package discover

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

func TestNextWait(t *testing.T) {
	for _, tc := range []struct {
		failures int
		want     time.Duration
	}{{0, time.Minute}, {1, 2 * time.Minute}, {2, 4 * time.Minute}, {3, 8 * time.Minute}, {4, 10 * time.Minute}, {100, 10 * time.Minute}} {
		if got := nextWait(time.Minute, 10*time.Minute, tc.failures); got != tc.want {
			t.Errorf("nextWait(1m, 10m, %d) = %v, want %v", tc.failures, got, tc.want)
		}
	}
}

// fakeNet answers each look with the next of its answers, handed over by the test.
type fakeNet struct {
	answers chan answer
	calls   chan struct{} // one per look begun
}

type answer struct {
	found  []Found
	err    error
	before func() // run in the look, before it returns (the clock moved while it listened)
}

func (n *fakeNet) lookup(ctx context.Context, _ time.Duration) ([]Found, error) {
	n.calls <- struct{}{}
	select {
	case a := <-n.answers:
		if a.before != nil {
			a.before()
		}
		return a.found, a.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// settings are a test's Settings, changed under mu.
type settings struct {
	mu  sync.Mutex // guards set
	set Settings
}

func (s *settings) get() Settings { s.mu.Lock(); defer s.mu.Unlock(); return s.set }
func (s *settings) change(f func(*Settings)) {
	s.mu.Lock()
	f(&s.set)
	s.mu.Unlock()
}

func TestDiscovererLoop(t *testing.T) {
	st := &settings{set: Settings{Browse: true, Advertise: true, Listen: "127.0.0.1:8080"}}
	d := New(Options{Self: Self{ID: "self", Name: "me", Version: "v"}, Settings: st.get, Every: time.Hour, Wait: time.Millisecond})
	n := &fakeNet{answers: make(chan answer), calls: make(chan struct{})}
	d.lookup = n.lookup
	var clockMu sync.Mutex // guards clock
	clock := time.Unix(1000, 0)
	d.now = func() time.Time { clockMu.Lock(); defer clockMu.Unlock(); return clock }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); d.Run(ctx) }()
	defer func() { cancel(); <-done }()

	round := func(a answer) {
		t.Helper()
		select {
		case <-n.calls:
		case <-time.After(10 * time.Second):
			t.Fatal("no look began")
		}
		n.answers <- a
	}
	names := func() []string {
		found, _, _ := d.Found()
		var out []string
		for _, f := range found {
			out = append(out, f.Name+" "+f.URL)
		}
		return out
	}
	waitChange := func(ch <-chan struct{}) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatal("Changed not closed")
		}
	}

	ch := d.Changed()
	round(answer{found: []Found{found("self", "me", "http://10.0.0.1:8080"), found("a", "alpha", "http://10.0.0.2:8080"), found("b", "beta", "http://10.0.0.3:8080")}})
	waitChange(ch)
	if got := names(); len(got) != 2 || got[0] != "alpha http://10.0.0.2:8080" || got[1] != "beta http://10.0.0.3:8080" {
		t.Fatalf("Found = %q", got)
	}
	found0, _, _ := d.Found()
	if !found0[0].LastSeen.Equal(time.Unix(1000, 0)) {
		t.Errorf("LastSeen = %v", found0[0].LastSeen)
	}

	// A configured peer is no longer offered, at once.
	st.change(func(s *Settings) { s.PeerURLs = []string{"http://10.0.0.3:8080/"} })
	if got := names(); len(got) != 1 || got[0] != "alpha http://10.0.0.2:8080" {
		t.Fatalf("Found with beta configured = %q", got)
	}

	// A failed look keeps what was seen and says why; one not heard for three rounds is dropped.
	d.Poke()
	round(answer{err: errors.New("no multicast here")})
	ch = d.Changed()
	d.Poke()
	later := func() { clockMu.Lock(); clock = clock.Add(4 * time.Hour); clockMu.Unlock() }
	round(answer{found: []Found{found("c", "gamma", "http://10.0.0.4:8080")}, before: later})
	waitChange(ch)
	if got := names(); len(got) != 1 || got[0] != "gamma http://10.0.0.4:8080" {
		t.Fatalf("Found after expiry = %q", got)
	}
	if _, enabled, err := d.Found(); !enabled || err != nil {
		t.Errorf("Found: enabled %v err %v, want true, nil", enabled, err)
	}

	// Browsing off: nothing is offered, and no look is made.
	ch = d.Changed()
	st.change(func(s *Settings) { s.Browse = false })
	d.Poke()
	waitChange(ch)
	if found, enabled, _ := d.Found(); enabled || len(found) != 0 {
		t.Errorf("Found with discover off = %v, enabled %v", found, enabled)
	}
	select {
	case <-n.calls:
		t.Error("a look was made with discover off")
	default:
	}
}

func TestDiscovererFailureReported(t *testing.T) {
	st := &settings{set: Settings{Browse: true}}
	d := New(Options{Self: Self{ID: "self"}, Settings: st.get, Every: time.Hour})
	n := &fakeNet{answers: make(chan answer), calls: make(chan struct{})}
	d.lookup = n.lookup
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); d.Run(ctx) }()
	<-n.calls
	n.answers <- answer{err: errors.New("mdns lookup: no multicast")}
	d.Poke() // the next look begins only once the failed one is recorded
	<-n.calls
	if _, _, err := d.Found(); err == nil || err.Error() != "mdns lookup: no multicast" {
		t.Errorf("Found err = %v", err)
	}
	cancel()
	<-done
}

// TestDiscovererBoundsAFlood: a network that answers with thousands of instances fills at most
// maxFound.
func TestDiscovererBoundsAFlood(t *testing.T) {
	st := &settings{set: Settings{Browse: true, Listen: "127.0.0.1:8080"}}
	d := New(Options{Self: Self{ID: "self", Name: "me", Version: "v"}, Settings: st.get, Every: time.Hour, Wait: time.Millisecond})
	var flood []Found
	for i := range 5000 {
		flood = append(flood, found(fmt.Sprint("id", i), fmt.Sprint("n", i), fmt.Sprintf("http://10.%d.%d.%d:8080", i>>16&255, i>>8&255, i&255)))
	}
	d.lookup = func(context.Context, time.Duration) ([]Found, error) { return flood, nil }
	d.look(context.Background())
	if got, _, _ := d.Found(); len(got) != maxFound {
		t.Fatalf("%d instances kept of 5000 announced, want %d", len(got), maxFound)
	}
}
