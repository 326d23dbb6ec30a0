package hub

import "time"

// FileProgress is one file of a download.
type FileProgress struct {
	Path  string `json:"path"`
	Done  int64  `json:"done"`
	Total int64  `json:"total"`
}

// Progress is a download's state, reported as it goes.
type Progress struct {
	Files []FileProgress
	Done  int64
	Total int64
	Rate  float64       // bytes per second over the last seconds
	Left  time.Duration // time left at Rate; 0 when unknown
	File  string        // the file being downloaded now
}

// advance counts n more bytes of file i (negative: bytes dropped).
func (d *download) advance(i int, n int64) {
	d.mu.Lock()
	d.p.Files[i].Done += n
	d.p.Done += n
	d.mu.Unlock()
}

// found counts n bytes of file i that were already on disk: done, but not part of the rate.
func (d *download) found(i int, n int64) {
	d.mu.Lock()
	d.p.Files[i].Done += n
	d.p.Done += n
	d.speed.Found(n)
	d.mu.Unlock()
}

// startTicker reports progress four times a second until the returned function is called; that
// function returns once no report runs any more.
func (d *download) startTicker() func() {
	if d.progress == nil {
		return func() {}
	}
	stop := make(chan struct{})
	ticked := make(chan struct{})
	go func() {
		defer close(ticked)
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				d.report()
			case <-stop:
				return
			}
		}
	}()
	return func() { close(stop); <-ticked }
}

// report computes rate and time left over the last seconds (download.Speed) and calls progress. Only the
// ticker calls it, and Download once after the ticker stopped, so calls never overlap.
func (d *download) report() {
	d.mu.Lock()
	d.p.Rate, d.p.Left = d.speed.At(time.Now(), d.p.Done, d.p.Total)
	p := d.p
	p.Files = append([]FileProgress(nil), d.p.Files...)
	d.mu.Unlock()
	d.progress(p)
}
