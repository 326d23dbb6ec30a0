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

// sums are the additive parts of wire.ActivityStats; the JSON keys are those of the kept file.
type sums struct {
	Requests  int           `json:"requests"`
	Errors    int           `json:"errors,omitempty"`
	In        int64         `json:"in,omitempty"`
	Out       int64         `json:"out,omitempty"`
	TTFTN     int           `json:"ttft_n,omitempty"`
	TTFT      time.Duration `json:"ttft_ns,omitempty"`
	GenTokens int64         `json:"gen_tokens,omitempty"`
	GenMs     float64       `json:"gen_ms,omitempty"`
	WaitN     int           `json:"wait_n,omitempty"`
	Wait      time.Duration `json:"wait_ns,omitempty"`
	MaxWait   time.Duration `json:"max_wait_ns,omitempty"`
	Drafted   int64         `json:"drafted,omitempty"` // draft tokens proposed
	Taken     int64         `json:"taken,omitempty"`   // draft tokens accepted
}

func (a *sums) add(b sums) {
	a.Requests += b.Requests
	a.Errors += b.Errors
	a.In += b.In
	a.Out += b.Out
	a.TTFTN += b.TTFTN
	a.TTFT += b.TTFT
	a.GenTokens += b.GenTokens
	a.GenMs += b.GenMs
	a.WaitN += b.WaitN
	a.Wait += b.Wait
	a.MaxWait = max(a.MaxWait, b.MaxWait)
	a.Drafted += b.Drafted
	a.Taken += b.Taken
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
	v := sums{Requests: 1, WaitN: 1, Wait: s.Wait, MaxWait: s.Wait}
	if s.Status == 0 || s.Status >= 400 {
		v.Errors = 1
	}
	if u := s.Usage; u != nil {
		v.In, v.Out = u.In(), u.Out()
		if u.HasTimings {
			v.TTFTN = 1
			v.TTFT = s.Wait + time.Duration(u.Timings.PromptMs*float64(time.Millisecond))
			if u.Timings.PredictedMs > 0 {
				v.GenTokens, v.GenMs = u.Timings.PredictedN, u.Timings.PredictedMs
			}
			v.Drafted, v.Taken = u.Timings.DraftN, u.Timings.DraftAccepted
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.add(s.Model, s.End.UnixNano()/int64(r.bucket), v)
}

// add adds v to model id's bucket idx, unless the bucket's slot holds a later one. Called with mu
// held.
func (r *Recorder) add(id string, idx int64, v sums) {
	ser := r.models[id]
	if ser == nil {
		ser = &series{start: make([]int64, r.n), sums: make([]sums, r.n)}
		r.models[id] = ser
	}
	slot := int(idx % int64(r.n))
	if idx < ser.start[slot] {
		return // older than the window the slot holds now
	}
	if ser.start[slot] != idx {
		ser.start[slot], ser.sums[slot] = idx, sums{}
	}
	ser.sums[slot].add(v)
}

// window is the bucket indexes (unix time / bucket) the recorder shows now, first to last.
func (r *Recorder) window() (first, last int64) {
	last = r.now().UnixNano() / int64(r.bucket)
	return last - int64(r.n) + 1, last
}

// Snapshot returns the last hour (the recorder's window) as the wire document.
func (r *Recorder) Snapshot() wire.Activity {
	first, last := r.window()
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
	st := wire.ActivityStats{Start: start, Requests: s.Requests, Errors: s.Errors, TokensIn: s.In, TokensOut: s.Out,
		MaxQueueWaitMs: ms(s.MaxWait)}
	if s.TTFTN > 0 {
		st.TTFTMs = ms(s.TTFT) / float64(s.TTFTN)
	}
	if s.GenMs > 0 {
		st.TokensPerSecond = float64(s.GenTokens) / (s.GenMs / 1000)
	}
	if s.WaitN > 0 {
		st.QueueWaitMs = ms(s.Wait) / float64(s.WaitN)
	}
	if s.Drafted > 0 {
		st.DraftTokens, st.DraftAccepted = s.Drafted, s.Taken
		st.DraftAcceptance = float64(s.Taken) / float64(s.Drafted)
	}
	return st
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
