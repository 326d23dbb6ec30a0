package download

import "time"

// Speed measures a download's rate over its last seconds and the time left at that rate. It is a
// plain value: its one user calls At from one goroutine at a time.
type Speed struct {
	samples []sample
}

type sample struct {
	at    time.Time
	bytes int64
}

// speedWindow is how far back the rate looks.
const speedWindow = 5 * time.Second

// Found counts n bytes into done that did not come over the network (a partial file resumed, a
// file already complete): the rate leaves them out, as if they had been there from the start.
func (s *Speed) Found(n int64) {
	for i := range s.samples {
		s.samples[i].bytes += n
	}
}

// At records that done of total bytes came by now and returns the rate in bytes per second over
// the last seconds and the time left at it (0 when unknown).
func (s *Speed) At(now time.Time, done, total int64) (rate float64, left time.Duration) {
	s.samples = append(s.samples, sample{now, done})
	for len(s.samples) > 2 && now.Sub(s.samples[0].at) > speedWindow {
		s.samples = s.samples[1:]
	}
	first := s.samples[0]
	if dt := now.Sub(first.at).Seconds(); dt > 0.05 {
		rate = float64(done-first.bytes) / dt
	}
	if rate > 0 && total > done {
		left = time.Duration(float64(total-done) / rate * float64(time.Second))
	}
	return rate, left
}
