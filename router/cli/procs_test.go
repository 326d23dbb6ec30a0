package cli

import "testing"

func TestRouterProcs(t *testing.T) {
	for _, c := range []struct{ cpus, want int }{
		{1, 1}, {2, 1}, {3, 1}, {4, 2}, {6, 3}, {8, 4}, {16, 4}, {128, 4},
	} {
		if got := RouterProcs(c.cpus); got != c.want {
			t.Errorf("RouterProcs(%d) = %d, want %d", c.cpus, got, c.want)
		}
	}
}
