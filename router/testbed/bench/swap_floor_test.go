package main

import "testing"

// The floor of the loads: a client's requests in order, one model at a time or two.
func TestFewestLoads(t *testing.T) {
	for _, c := range []struct {
		name        string
		picks       [][]int
		room, loads int
	}{
		{"one client, runs of one model: a load per run", [][]int{{0, 0, 1, 1, 0}}, 1, 3},
		{"room for two: the alternation needs no more loads", [][]int{{0, 1, 0, 1, 0}}, 2, 2},
		{"two clients, opposite orders: a b a, or b a b", [][]int{{0, 1}, {1, 0}}, 1, 3},
		{"a shared order is served once", [][]int{{0, 1, 2}, {0, 1, 2}, {1, 2}}, 1, 3},
		{"three models, room for two: one eviction", [][]int{{0, 1, 2}, {2, 1}}, 2, 3},
		{"nothing asked, nothing loaded", [][]int{{}, {}}, 1, 0},
	} {
		if got := fewestLoads(c.picks, 3, c.room); got != c.loads {
			t.Errorf("%s: %d loads, want %d", c.name, got, c.loads)
		}
	}
	// The bench's own workload: six clients, eight requests each, three models.
	if got := fewestLoads(swapPicks(6, 8, 3), 3, 1); got != 10 {
		t.Errorf("the bench's workload with room for one: %d loads at least, want 10", got)
	}
}
