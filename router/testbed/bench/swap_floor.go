package main

import "math/rand/v2"

// swapPicks is the model each client asks for with each of its requests (an index into the models):
// client w's picks come from its own seeded generator, so every system gets the same workload.
func swapPicks(clients, each, models int) [][]int {
	picks := make([][]int, clients)
	for w := range clients {
		rng := rand.New(rand.NewPCG(42, uint64(w)))
		for range each {
			picks[w] = append(picks[w], rng.IntN(models))
		}
	}
	return picks
}

// fewestLoads is the floor of the loads: the fewest any scheduler can make for picks with room for
// room of the models at once, each client's requests served in order, one after the other. A
// breadth-first search over (each client's next request, the models loaded): a load brings one
// model in (evicting one when room is full), and every client whose next requests are for loaded
// models is served as far as they go. 0 when the search would be too large to run here.
func fewestLoads(picks [][]int, models, room int) int {
	if models > 8 || len(picks) > 16 {
		return 0
	}
	for _, p := range picks {
		if len(p) > 255 {
			return 0
		}
	}
	type state struct {
		pos    string // each client's next request, one byte each
		loaded uint8  // the models loaded, a bit each
	}
	serve := func(pos []byte, loaded uint8) state {
		for i, p := range picks {
			for int(pos[i]) < len(p) && loaded&(1<<p[pos[i]]) != 0 {
				pos[i]++
			}
		}
		return state{string(pos), loaded}
	}
	done := func(s state) bool {
		for i, p := range picks {
			if int(s.pos[i]) < len(p) {
				return false
			}
		}
		return true
	}
	start := state{pos: string(make([]byte, len(picks)))}
	seen := map[state]bool{start: true}
	for loads, front := 0, []state{start}; len(front) > 0; loads++ {
		if len(seen) > 5_000_000 {
			return 0
		}
		var next []state
		for _, s := range front {
			if done(s) {
				return loads
			}
			n := 0
			for k := range models {
				if s.loaded&(1<<k) != 0 {
					n++
				}
			}
			for k := range models {
				if s.loaded&(1<<k) != 0 {
					continue
				}
				var ins []uint8
				if n < room {
					ins = append(ins, s.loaded|1<<k)
				} else {
					for j := range models {
						if s.loaded&(1<<j) != 0 {
							ins = append(ins, s.loaded&^(1<<j)|1<<k)
						}
					}
				}
				for _, l := range ins {
					if t := serve([]byte(s.pos), l); !seen[t] {
						seen[t] = true
						next = append(next, t)
					}
				}
			}
		}
		front = next
	}
	return 0
}
