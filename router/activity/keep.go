package activity

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/llamatray/llamatray/router/atomicfile"
)

// FileName is the file in the state folder that keeps the last hour's activity across restarts.
const FileName = "activity.json"

// kept is the file: each model's buckets of the last hour, by bucket index (unix time / bucket).
// It holds no more than the recorder shows: the buckets of one window, for the models active in it.
type kept struct {
	BucketSeconds int                   `json:"bucket_seconds"`
	Buckets       int                   `json:"buckets"`
	Models        map[string][]keptSlot `json:"models"`
}

type keptSlot struct {
	Index     int64         `json:"index"`
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
	Drafted   int64         `json:"drafted,omitempty"`
	Taken     int64         `json:"taken,omitempty"`
}

// Save writes the buckets of the current window to path (atomically), so that Load can bring them
// back after a restart. A nil Recorder saves nothing.
func (r *Recorder) Save(path string) error {
	if r == nil {
		return nil
	}
	last := r.now().UnixNano() / int64(r.bucket)
	first := last - int64(r.n) + 1
	k := kept{BucketSeconds: int(r.bucket / time.Second), Buckets: r.n, Models: map[string][]keptSlot{}}
	r.mu.Lock()
	for id, ser := range r.models {
		for slot, idx := range ser.start {
			if idx >= first && idx <= last && ser.sums[slot].requests > 0 {
				s := ser.sums[slot]
				k.Models[id] = append(k.Models[id], keptSlot{Index: idx, Requests: s.requests, Errors: s.errors,
					In: s.in, Out: s.out, TTFTN: s.ttftN, TTFT: s.ttft, GenTokens: s.genTokens, GenMs: s.genMs,
					WaitN: s.waitN, Wait: s.wait, MaxWait: s.maxWait, Drafted: s.drafted, Taken: s.taken})
			}
		}
	}
	r.mu.Unlock()
	data, err := json.Marshal(k)
	if err != nil {
		return fmt.Errorf("activity: %w", err)
	}
	if err := atomicfile.Write(path, data, 0o600); err != nil {
		return fmt.Errorf("activity: keep the last hour: %w", err)
	}
	return nil
}

// Load adds what Save kept at path, the buckets still in the window. A missing file is no error;
// a file of another bucket width is left out.
func (r *Recorder) Load(path string) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("activity: %w", err)
	}
	var k kept
	if err := json.Unmarshal(data, &k); err != nil {
		return fmt.Errorf("activity: %s: %w", path, err)
	}
	if time.Duration(k.BucketSeconds)*time.Second != r.bucket {
		return nil
	}
	last := r.now().UnixNano() / int64(r.bucket)
	first := last - int64(r.n) + 1
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, slots := range k.Models {
		for _, ks := range slots {
			if id == "" || ks.Index < first || ks.Index > last {
				continue
			}
			ser := r.models[id]
			if ser == nil {
				ser = &series{start: make([]int64, r.n), sums: make([]sums, r.n)}
				r.models[id] = ser
			}
			slot := int(ks.Index % int64(r.n))
			if ser.start[slot] != ks.Index {
				ser.start[slot], ser.sums[slot] = ks.Index, sums{}
			}
			ser.sums[slot].add(sums{requests: ks.Requests, errors: ks.Errors, in: ks.In, out: ks.Out, ttftN: ks.TTFTN,
				ttft: ks.TTFT, genTokens: ks.GenTokens, genMs: ks.GenMs, waitN: ks.WaitN, wait: ks.Wait,
				maxWait: ks.MaxWait, drafted: ks.Drafted, taken: ks.Taken})
		}
	}
	return nil
}
