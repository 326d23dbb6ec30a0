package hub

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// A paused pull keeps its partial file; the next pull of the model resumes it with a range
// request and verifies the whole file.
func TestManagerPauseKeepsPartialAndResumes(t *testing.T) {
	f := newFixture(t)
	m := NewManager(f.c, f.cache, nil, nil)
	l := f.listing(t)
	file := f.quant(t, l, "Q8_0").Files[0]
	started := f.hub.Stall(repoID, "tiny-Q8_0.gguf", file.Size/2)
	events, unsub := m.Subscribe()
	defer unsub()
	ref, _ := ParseRef("Org/Tiny-GGUF:Q8_0")
	st, err := m.Start(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	<-started
	for ev := range events { // the stalled half has reached the file
		if ev.Progress.Done >= file.Size/2 {
			break
		}
	}
	if !m.Pause(st.Model) {
		t.Fatal("pause found no pull")
	}
	end, _ := m.Wait(context.Background(), st.Model)
	if end.State != StatePaused {
		t.Fatalf("paused pull ended %+v", end)
	}
	part := filepath.Join(f.cache.RepoDir(repoID), "blobs", file.SHA256+".incomplete")
	fi, err := os.Stat(part)
	if err != nil || fi.Size() < file.Size/2 {
		t.Fatalf("partial file after a pause: %v, %v", fi, err)
	}

	f.hub.Stall(repoID, "tiny-Q8_0.gguf", 1<<62) // the network is back
	before := f.hub.RangeRequests()
	if _, err := m.Start(context.Background(), ref); err != nil {
		t.Fatal(err)
	}
	end, _ = m.Wait(context.Background(), st.Model)
	if end.State != StateDownloaded {
		t.Fatalf("resumed pull ended %+v", end)
	}
	if f.hub.RangeRequests() <= before {
		t.Error("the resumed pull did not ask for the rest with a range request")
	}
	assertBlob(t, f, file)
	if _, err := os.Stat(part); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("partial file left after the download: %v", err)
	}
}
