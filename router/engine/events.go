package engine

import "slices"

// subscriber receives events on a buffered channel. lost (guarded by Engine.mu) is set when its buffer
// was full; the next event it gets is preceded by a "resync" event so it re-reads the snapshot.
type subscriber struct {
	ch    chan Event
	lost  bool
	kinds []EventKind // the kinds it gets (and EventResync); nil: every kind
}

const subscriberBuffer = 1024

// Subscribe returns a channel of events and a function that cancels the subscription. A subscriber
// that falls behind never blocks the engine: it loses events and then receives a "resync" event.
func (e *Engine) Subscribe() (<-chan Event, func()) { return e.SubscribeTo() }

// SubscribeTo is Subscribe for only the events of these kinds (with EventResync after lost ones);
// none given: every kind. A subscriber that wants no lease events is not woken twice a request.
func (e *Engine) SubscribeTo(kinds ...EventKind) (<-chan Event, func()) {
	s := &subscriber{ch: make(chan Event, subscriberBuffer), kinds: slices.Clone(kinds)}
	e.mu.Lock()
	if e.closed {
		close(s.ch)
	} else {
		e.subs[s] = struct{}{}
	}
	e.mu.Unlock()
	return s.ch, func() {
		e.mu.Lock()
		if _, ok := e.subs[s]; ok {
			delete(e.subs, s)
			close(s.ch)
		}
		e.mu.Unlock()
	}
}

// publish stamps ev and offers it to every subscriber without blocking. Called with mu held.
func (e *Engine) publish(ev Event) {
	e.seq++
	ev.Seq = e.seq
	ev.Time = e.fx.Now()
	for s := range e.subs {
		if s.kinds != nil && !slices.Contains(s.kinds, ev.Kind) {
			continue
		}
		if s.lost {
			select {
			case s.ch <- Event{Seq: ev.Seq, Time: ev.Time, Kind: EventResync}:
				s.lost = false
			default:
				continue
			}
		}
		select {
		case s.ch <- ev:
		default:
			s.lost = true
		}
	}
}
