package fit

import "testing"

func TestFor(t *testing.T) {
	r := Room{Limit: 100, Free: 30, Idle: 40}
	for _, c := range []struct {
		need int64
		want Fit
	}{{20, Now}, {30, Now}, {60, AfterUnload}, {90, AfterUnload}, {101, TooLarge}, {0, AfterUnload}} {
		if got, why := For(c.need, r); got != c.want || why == "" {
			t.Errorf("need %d: %s (%s), want %s", c.need, got, why, c.want)
		}
	}
}
