package activity

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// The last hour's activity survives a restart: a new recorder that loads what the old one saved
// shows the same, and what has left the window by the time it loads is dropped.
func TestKeptAcrossRestart(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 30, 0, 0, time.UTC)
	old := New(0, 0)
	old.SetClock(func() time.Time { return now })
	u := &Usage{HasTimings: true, Timings: Timings{PromptMs: 20, PredictedN: 40, PredictedMs: 800, DraftN: 10, DraftAccepted: 7}}
	old.Record(Sample{Model: "a", End: now.Add(-50 * time.Minute), Status: 200, Wait: time.Second, Usage: u})
	old.Record(Sample{Model: "a", End: now.Add(-time.Minute), Status: 500})
	old.Record(Sample{Model: "b", End: now, Status: 200, Wait: 10 * time.Millisecond, Usage: u})
	path := filepath.Join(t.TempDir(), FileName)
	if err := old.Save(path); err != nil {
		t.Fatal(err)
	}

	again := New(0, 0)
	again.SetClock(func() time.Time { return now })
	if err := again.Load(path); err != nil {
		t.Fatal(err)
	}
	if got, want := again.Snapshot(), old.Snapshot(); !reflect.DeepEqual(got, want) {
		t.Fatalf("after a restart:\n%+v\nwant\n%+v", got, want)
	}

	later := New(0, 0) // started 20 minutes later: a's first request has left the hour
	later.SetClock(func() time.Time { return now.Add(20 * time.Minute) })
	if err := later.Load(path); err != nil {
		t.Fatal(err)
	}
	for _, m := range later.Snapshot().Models {
		if m.Model == "a" && (m.Total.Requests != 1 || m.Total.Errors != 1) {
			t.Errorf("a, 20 minutes later: %+v; want the one failed request still in the hour", m.Total)
		}
	}
}

// No file yet is no error; a broken one is, and loses nothing the recorder holds.
func TestLoadMissingOrBroken(t *testing.T) {
	r := New(0, 0)
	dir := t.TempDir()
	if err := r.Load(filepath.Join(dir, FileName)); err != nil {
		t.Fatalf("no file: %v", err)
	}
	r.Record(Sample{Model: "a", Status: 200})
	broken := filepath.Join(dir, "broken.json")
	if err := os.WriteFile(broken, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := r.Load(broken); err == nil {
		t.Fatal("a broken file loaded without error")
	}
	if got := r.Snapshot().Models; len(got) != 1 || got[0].Total.Requests != 1 {
		t.Fatalf("after a broken file: %+v", got)
	}
}
