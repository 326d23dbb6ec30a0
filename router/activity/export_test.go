package activity

import "time"

// SetClock replaces the recorder's clock.
func (r *Recorder) SetClock(now func() time.Time) { r.now = now }
