// Package activity keeps, per model, what its requests did over the last hour, in buckets:
// requests, errors, tokens in and out, time to first token, tokens per second and queue wait. It
// is fed by the HTTP layer's proxy (one Record per request, the usage read by a Scanner as the
// answer passes) and read by GET /api/activity and the window. It keeps no prompt or answer text.
package activity

import (
	"cmp"
	"slices"
	"sync"
	"time"

	"github.com/llamatray/llamatray/router/wire"
)

// Defaults: one hour in one-minute buckets.
const (
	DefaultBucket  = time.Minute
	DefaultBuckets = 60
)

// Sample is one finished request.
type Sample struct {
	Model  string
	End    time.Time     // when the answer ended
	Status int           // the child's status; 0 when no answer came
	Wait   time.Duration // time spent waiting for the model (queue and load)
	Usage  *Usage        // nil when the answer reported nothing
}

// Recorder holds the activity of every model.
type Recorder struct {
	bucket time.Duration
	n      int
	now    func() time.Time

	mu     sync.Mutex         // guards models
	models map[string]*series // by model ID
}

// series is one model's ring of buckets; slot i holds the bucket starting at start[i].
type series struct {
	start []int64 // bucket index (unix time / bucket) of each slot, to find stale slots
	sums  []sums
}

// sums are the additive parts of wire.ActivityStats.
type sums struct {
	requests, errors int
	in, out          int64
	ttftN            int
	ttft             time.Duration
	genTokens        int64
	genMs            float64
	waitN            int
	wait, maxWait    time.Duration
	drafted, taken   int64 // draft tokens proposed and accepted
}

func (a *sums) add(b sums) {
	a.requests += b.requests
	a.errors += b.errors
	a.in += b.in
	a.out += b.out
	a.ttftN += b.ttftN
	a.ttft += b.ttft
	a.genTokens += b.genTokens
	a.genMs += b.genMs
	a.waitN += b.waitN
	a.wait += b.wait
	a.maxWait = max(a.maxWait, b.maxWait)
	a.drafted += b.drafted
	a.taken += b.taken
}

// New returns a Recorder of n buckets of width bucket (zeros: the defaults).
func New(bucket time.Duration, n int) *Recorder {
	if bucket <= 0 {
		bucket = DefaultBucket
	}
	if n <= 0 {
		n = DefaultBuckets
	}
	return &Recorder{bucket: bucket, n: n, now: time.Now, models: map[string]*series{}}
}

// Record adds one finished request. A nil Recorder records nothing.
func (r *Recorder) Record(s Sample) {
	if r == nil || s.Model == "" {
		return
	}
	if s.End.IsZero() {
		s.End = r.now()
	}
	v := sums{requests: 1, waitN: 1, wait: s.Wait, maxWait: s.Wait}
	if s.Status == 0 || s.Status >= 400 {
		v.errors = 1
	}
	if u := s.Usage; u != nil {
		v.in, v.out = u.In(), u.Out()
		if u.HasTimings {
			v.ttftN = 1
			v.ttft = s.Wait + time.Duration(u.Timings.PromptMs*float64(time.Millisecond))
			if u.Timings.PredictedMs > 0 {
				v.genTokens, v.genMs = u.Timings.PredictedN, u.Timings.PredictedMs
			}
			v.drafted, v.taken = u.Timings.DraftN, u.Timings.DraftAccepted
		}
	}
	idx := s.End.UnixNano() / int64(r.bucket)
	slot := int(idx % int64(r.n))
	r.mu.Lock()
	defer r.mu.Unlock()
	ser := r.models[s.Model]
	if ser == nil {
		ser = &series{start: make([]int64, r.n), sums: make([]sums, r.n)}
		r.models[s.Model] = ser
	}
	if idx < ser.start[slot] {
		return // older than the window the slot holds now
	}
	if ser.start[slot] != idx {
		ser.start[slot], ser.sums[slot] = idx, sums{}
	}
	ser.sums[slot].add(v)
}

// Snapshot returns the last hour (the recorder's window) as the wire document.
func (r *Recorder) Snapshot() wire.Activity {
	now := r.now()
	last := now.UnixNano() / int64(r.bucket)
	first := last - int64(r.n) + 1
	doc := wire.Activity{Since: time.Unix(0, first*int64(r.bucket)).UTC(), BucketSeconds: int(r.bucket / time.Second), Models: []wire.ModelActivity{}}
	type copied struct {
		id   string
		sums []sums // by bucket, oldest first
	}
	var all []copied
	r.mu.Lock()
	for id, ser := range r.models {
		c := copied{id: id, sums: make([]sums, r.n)}
		live := false
		for slot, idx := range ser.start {
			if idx >= first && idx <= last {
				c.sums[idx-first] = ser.sums[slot]
				live = true
			}
		}
		if live {
			all = append(all, c)
		} else {
			delete(r.models, id) // nothing left in the window
		}
	}
	r.mu.Unlock()
	slices.SortFunc(all, func(a, b copied) int { return cmp.Compare(a.id, b.id) })
	for _, c := range all {
		m := wire.ModelActivity{Model: c.id, Buckets: make([]wire.ActivityStats, r.n)}
		var total sums
		for i, s := range c.sums {
			m.Buckets[i] = s.stats(time.Unix(0, (first+int64(i))*int64(r.bucket)).UTC())
			total.add(s)
		}
		m.Total = total.stats(doc.Since)
		doc.Models = append(doc.Models, m)
	}
	return doc
}

func (s sums) stats(start time.Time) wire.ActivityStats {
	st := wire.ActivityStats{Start: start, Requests: s.requests, Errors: s.errors, TokensIn: s.in, TokensOut: s.out,
		MaxQueueWaitMs: ms(s.maxWait)}
	if s.ttftN > 0 {
		st.TTFTMs = ms(s.ttft) / float64(s.ttftN)
	}
	if s.genMs > 0 {
		st.TokensPerSecond = float64(s.genTokens) / (s.genMs / 1000)
	}
	if s.waitN > 0 {
		st.QueueWaitMs = ms(s.wait) / float64(s.waitN)
	}
	if s.drafted > 0 {
		st.DraftTokens, st.DraftAccepted = s.drafted, s.taken
		st.DraftAcceptance = float64(s.taken) / float64(s.drafted)
	}
	return st
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
