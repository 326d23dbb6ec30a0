package front

import (
	"sync"
	"time"
)

// watchAfter is how long a request runs, its body read, before its connection is read meanwhile
// for the client's leaving; a client that leaves is noticed within about twice that. Most answers of
// a proxy on loopback take less, and those never cost a second goroutine and read.
const watchAfter = 10 * time.Millisecond

// idleSweeps is how many looks with nothing listed the sweeper takes before it stops; the next
// listed request starts it again.
const idleSweeps = 100

// sweeper starts watchClient for the requests that have run watchAfter. It runs while requests
// are listed, and stops after idleSweeps empty looks.
type sweeper struct {
	mu      sync.Mutex // guards listed and running
	listed  map[*conn]time.Time
	running bool
}

// add lists c's request (its body was read); the sweeper starts if it is not running.
func (s *sweeper) add(c *conn) {
	c.watch.Store(watchListed)
	s.mu.Lock()
	if s.listed == nil {
		s.listed = map[*conn]time.Time{}
	}
	s.listed[c] = time.Now()
	start := !s.running
	s.running = true
	s.mu.Unlock()
	if start {
		go s.run()
	}
}

// remove takes c's request off the list (it ended before a watchClient started).
func (s *sweeper) remove(c *conn) {
	s.mu.Lock()
	delete(s.listed, c)
	s.mu.Unlock()
}

func (s *sweeper) run() {
	t := time.NewTicker(watchAfter)
	defer t.Stop()
	empty := 0
	var due []*conn
	for now := range t.C {
		due = due[:0]
		s.mu.Lock()
		if len(s.listed) == 0 {
			if empty++; empty >= idleSweeps {
				s.running = false
				s.mu.Unlock()
				return
			}
		} else {
			empty = 0
		}
		for c, since := range s.listed {
			if now.Sub(since) >= watchAfter {
				delete(s.listed, c)
				due = append(due, c)
			}
		}
		s.mu.Unlock()
		for _, c := range due {
			if c.watch.CompareAndSwap(watchListed, watchReading) {
				go c.watchClient()
			}
		}
	}
}
