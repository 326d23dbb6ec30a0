package front

import (
	"sync"
	"time"
)

// watchAfter is how long a request runs, its body read, before its connection is read meanwhile
// for the client's leaving; a client that leaves is noticed within about twice that. Most answers of
// a proxy on loopback take less, and those never cost a second goroutine and read.
const watchAfter = 10 * time.Millisecond

// sweeper starts watchClient for the requests that have run watchAfter. One timer, armed while
// requests are listed, fires watchAfter after the first of them was listed and every watchAfter
// while any is; a request that ends first takes itself off the list, and the last one off stops
// the timer. So answers that all take less than watchAfter never wake it.
type sweeper struct {
	mu     sync.Mutex // guards listed, timer and armed
	listed map[*conn]time.Time
	timer  *time.Timer // runs sweep; made by the first add
	armed  bool        // timer is set to fire
}

// add lists c's request (its body was read); the timer is armed if it is not.
func (s *sweeper) add(c *conn) {
	c.watch.Store(watchListed)
	now := time.Now()
	s.mu.Lock()
	if s.listed == nil {
		s.listed = map[*conn]time.Time{}
	}
	s.listed[c] = now
	if !s.armed {
		s.armed = true
		if s.timer == nil {
			s.timer = time.AfterFunc(watchAfter, s.sweep)
		} else {
			s.timer.Reset(watchAfter)
		}
	}
	s.mu.Unlock()
}

// remove takes c's request off the list (it ended before a watchClient started).
func (s *sweeper) remove(c *conn) {
	s.mu.Lock()
	delete(s.listed, c)
	if len(s.listed) == 0 && s.armed {
		s.armed = false
		s.timer.Stop()
	}
	s.mu.Unlock()
}

// sweep starts watchClient for every request due and arms the timer for the next one.
func (s *sweeper) sweep() {
	now := time.Now()
	var due []*conn
	s.mu.Lock()
	for c, since := range s.listed {
		if now.Sub(since) >= watchAfter {
			delete(s.listed, c)
			due = append(due, c)
		}
	}
	// Again in watchAfter, not at the next request's own due time: under steady load the sweeps
	// stay one per watchAfter, and a request is watched after watchAfter to twice that.
	s.armed = len(s.listed) > 0
	if s.armed {
		s.timer.Reset(watchAfter)
	}
	s.mu.Unlock()
	for _, c := range due {
		if c.watch.CompareAndSwap(watchListed, watchReading) {
			go c.watchClient()
		}
	}
}
