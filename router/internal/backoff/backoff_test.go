package backoff

import (
	"testing"
	"time"
)

func TestDoubling(t *testing.T) {
	for _, c := range []struct {
		n    int
		want time.Duration
	}{{-1, time.Second}, {0, time.Second}, {1, 2 * time.Second}, {5, 32 * time.Second}, {6, time.Minute}, {100, time.Minute}} {
		if got := Doubling(time.Second, time.Minute, c.n); got != c.want {
			t.Errorf("Doubling(1s, 1m, %d) = %v, want %v", c.n, got, c.want)
		}
	}
}

func TestNext(t *testing.T) {
	for _, c := range []struct{ last, want time.Duration }{
		{0, time.Second}, {time.Millisecond, time.Second}, {time.Second, 2 * time.Second},
		{20 * time.Second, 30 * time.Second}, {30 * time.Second, 30 * time.Second},
	} {
		if got := Next(c.last, time.Second, 30*time.Second); got != c.want {
			t.Errorf("Next(%v, 1s, 30s) = %v, want %v", c.last, got, c.want)
		}
	}
}
