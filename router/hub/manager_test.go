package hub

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestManagerPullEventsAndCancel(t *testing.T) {
	f := newFixture(t)
	var listedName string
	m := NewManager(f.c, f.cache, func(name string, paths []string) error {
		listedName = name
		return nil
	}, nil)
	events, stop := m.Subscribe()
	defer stop()
	ref, _ := ParseRef("org/tiny-gguf:q4_k_m")
	st, err := m.Start(context.Background(), ref)
	if err != nil || st.State != StateDownloading || st.Model != "Org/Tiny-GGUF:Q4_K_M" {
		t.Fatalf("start: %+v %v", st, err)
	}
	end, err := m.Wait(context.Background(), st.Model)
	if err != nil || end.State != StateDownloaded || len(end.Paths) != 2 || listedName != st.Model {
		t.Fatalf("end: %+v %v (listed %q)", end, err, listedName)
	}
	var states []string
	timeout := time.After(5 * time.Second)
	for len(states) == 0 || states[len(states)-1] != StateDownloaded {
		select {
		case ev := <-events:
			states = append(states, ev.State)
		case <-timeout:
			t.Fatalf("events: %v", states)
		}
	}
	if states[0] != StateDownloading {
		t.Errorf("events: %v", states)
	}

	// A stalled pull is cancelled and leaves nothing of itself.
	q8, _ := ParseRef("Org/Tiny-GGUF:Q8_0")
	l := f.listing(t)
	started := f.hub.Stall(repoID, "tiny-Q8_0.gguf", f.quant(t, l, "Q8_0").Files[0].Size/2)
	st, err = m.Start(context.Background(), q8)
	if err != nil {
		t.Fatal(err)
	}
	<-started
	if !m.Cancel("org/tiny-gguf:Q8_0") {
		t.Fatal("cancel found no pull")
	}
	end, _ = m.Wait(context.Background(), st.Model)
	if end.State != StateCancelled {
		t.Fatalf("cancelled pull: %+v", end)
	}
	if _, err := m.Start(context.Background(), Ref{Repo: "Org/Tiny-GGUF", Quant: "Q2_K"}); err == nil || !strings.Contains(err.Error(), "no quant Q2_K") {
		t.Errorf("missing quant: %v", err)
	}
	f.hub.Gate(repoID, "tok")
	m2 := NewManager(f.c, f.cache, nil, nil)
	_, err = m2.Start(context.Background(), Ref{Repo: repoID, Quant: "F16"})
	var he *Error
	if !errors.As(err, &he) || he.Status != 401 {
		t.Errorf("gated start: %v", err)
	}
}
