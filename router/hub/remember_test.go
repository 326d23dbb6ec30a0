package hub

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A pull cut by a restart is offered again by the next run, paused with what its partial file
// holds, and resumes from there.
func TestRememberOffersUnfinishedPullsAfterRestart(t *testing.T) {
	f := newFixture(t)
	state := filepath.Join(t.TempDir(), "pulls.json")
	l := f.listing(t)
	file := f.quant(t, l, "Q8_0").Files[0]
	m := NewManager(f.c, f.cache, nil, nil)
	if err := m.Remember(state); err != nil {
		t.Fatal(err)
	}
	started := f.hub.Stall(repoID, "tiny-Q8_0.gguf", file.Size/2)
	events, unsub := m.Subscribe()
	ref, _ := ParseRef(repoID + ":Q8_0")
	st, err := m.Start(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	<-started
	for ev := range events {
		if ev.Progress.Done >= file.Size/2 {
			break
		}
	}
	unsub()
	m.Close() // the app quits while the pull runs: its partial stays, the state file lists it
	b, _ := os.ReadFile(state)
	if !strings.Contains(string(b), st.Model) {
		t.Fatalf("state file after quitting mid-pull: %s", b)
	}
	m.Pause(st.Model) // (the process would be gone; this only ends the old manager's goroutine)
	m.Wait(context.Background(), st.Model)

	f.hub.Stall(repoID, "tiny-Q8_0.gguf", 1<<62)
	m2 := NewManager(f.c, f.cache, nil, nil)
	if err := m2.Remember(state); err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	got, ok := m2.Status(st.Model)
	if !ok || got.State != StatePaused || got.Progress.Done < file.Size/2 || !strings.Contains(got.Error, "resume") {
		t.Fatalf("after the restart: %+v %v", got, ok)
	}
	if list := m2.List(); len(list) != 1 || list[0].Model != st.Model {
		t.Fatalf("List after the restart: %+v", list)
	}
	before := f.hub.RangeRequests()
	if _, err := m2.Start(context.Background(), ref); err != nil {
		t.Fatal(err)
	}
	if end, _ := m2.Wait(context.Background(), st.Model); end.State != StateDownloaded {
		t.Fatalf("resumed pull: %+v", end)
	}
	if f.hub.RangeRequests() <= before {
		t.Error("the resume did not ask for the rest with a range request")
	}
	m2.Close()
	if b, _ := os.ReadFile(state); strings.Contains(string(b), st.Model) {
		t.Errorf("a finished pull is still listed as unfinished: %s", b)
	}
}

// A state file that is not JSON is set aside with a clear error; the manager works without it.
func TestRememberBadStateFile(t *testing.T) {
	f := newFixture(t)
	state := filepath.Join(t.TempDir(), "pulls.json")
	os.WriteFile(state, []byte("{not json"), 0o600)
	m := NewManager(f.c, f.cache, nil, nil)
	err := m.Remember(state)
	defer m.Close()
	if err == nil || !strings.Contains(err.Error(), "set aside") {
		t.Fatalf("err = %v", err)
	}
	if _, err := os.Stat(state + ".bad"); err != nil {
		t.Errorf("the bad file was not kept aside: %v", err)
	}
}

// Discard of a paused pull deletes its partial file and forgets it.
func TestDiscardPausedPull(t *testing.T) {
	f := newFixture(t)
	m := NewManager(f.c, f.cache, nil, nil)
	l := f.listing(t)
	file := f.quant(t, l, "Q8_0").Files[0]
	started := f.hub.Stall(repoID, "tiny-Q8_0.gguf", file.Size/2)
	ref, _ := ParseRef(repoID + ":Q8_0")
	st, err := m.Start(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	<-started
	m.Pause(st.Model)
	m.Wait(context.Background(), st.Model)
	part := filepath.Join(f.cache.RepoDir(repoID), "blobs", file.SHA256+".incomplete")
	if _, err := os.Stat(part); err != nil {
		t.Fatalf("no partial after the pause: %v", err)
	}
	if ok, err := m.Discard(st.Model); !ok || err != nil {
		t.Fatalf("discard: %v %v", ok, err)
	}
	if _, err := os.Stat(part); !os.IsNotExist(err) {
		t.Errorf("the partial is still there: %v", err)
	}
	if _, ok := m.Status(st.Model); ok {
		t.Error("the discarded pull is still listed")
	}
}
