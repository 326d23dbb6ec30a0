package engine

import "testing"

// SubscribeTo's subscriber gets only the kinds it asked for: the metrics' feed, which counts state
// changes, is not woken by the two lease events of every request.
func TestSubscribeToKinds(t *testing.T) {
	s := newSync(t, nil, syncModel{id: "a", ramMiB: 50})
	states, cancel := s.e.SubscribeTo(EventState)
	defer cancel()
	all, cancelAll := s.e.Subscribe()
	defer cancelAll()
	s.load("a")
	s.lease(s.request("a")).Release()
	kinds := func(ch <-chan Event) map[EventKind]int {
		n := map[EventKind]int{}
		for {
			select {
			case ev := <-ch:
				n[ev.Kind]++
			default:
				return n
			}
		}
	}
	got, gotAll := kinds(states), kinds(all)
	if got[EventState] == 0 || len(got) != 1 {
		t.Errorf("SubscribeTo(state) got %v, want state events only", got)
	}
	if gotAll[EventLease] < 4 || gotAll[EventState] != got[EventState] {
		t.Errorf("Subscribe got %v, want every lease event and the same state events (%d)", gotAll, got[EventState])
	}
}
