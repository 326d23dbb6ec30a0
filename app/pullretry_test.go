package app

import (
	"slices"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/hub"
)

// A download that fails for a passing reason is resumed after 2 s, 10 s and 30 s, then left to the
// person; one refused (a checksum) is not resumed; one that ends starts its count again.
func TestPullRetryBacksOff(t *testing.T) {
	var waits []time.Duration
	var resumed []string
	r := &pullRetry{tries: map[string]int{},
		resume: func(name string) { resumed = append(resumed, name) },
		after:  func(d time.Duration, f func()) { waits = append(waits, d); f() },
	}
	fail := func(model, err string) {
		r.event(hub.Event{PullStatus: hub.PullStatus{Model: model, State: hub.StateFailed, Error: err}})
	}
	const net = `cannot reach the Hugging Face Hub at https://huggingface.co: the connection failed (dial tcp: connection reset by peer)`
	for range 5 {
		fail("a/b:Q4", net)
	}
	if want := []time.Duration{2 * time.Second, 10 * time.Second, 30 * time.Second}; !slices.Equal(waits, want) || len(resumed) != 3 {
		t.Fatalf("waits %v, resumed %q; want %v and 3 resumes", waits, resumed, want)
	}
	fail("c/d:Q8", "c/d: x.gguf: sha256 mismatch (the Hub lists 1, the download is 2): refused and deleted")
	if len(resumed) != 3 {
		t.Fatalf("a checksum refusal was resumed: %q", resumed)
	}
	r.event(hub.Event{PullStatus: hub.PullStatus{Model: "a/b:Q4", State: hub.StateDownloaded}})
	fail("a/b:Q4", net)
	if len(resumed) != 4 || waits[3] != 2*time.Second {
		t.Fatalf("after a download that ended, a new failure waits %v (resumed %q)", waits, resumed)
	}
}
