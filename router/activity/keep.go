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
	Index int64 `json:"index"`
	sums
}

// Save writes the buckets of the current window to path (atomically), so that Load can bring them
// back after a restart. A nil Recorder saves nothing.
func (r *Recorder) Save(path string) error {
	if r == nil {
		return nil
	}
	first, last := r.window()
	k := kept{BucketSeconds: int(r.bucket / time.Second), Buckets: r.n, Models: map[string][]keptSlot{}}
	r.mu.Lock()
	for id, ser := range r.models {
		for slot, idx := range ser.start {
			if idx >= first && idx <= last && ser.sums[slot].Requests > 0 {
				k.Models[id] = append(k.Models[id], keptSlot{idx, ser.sums[slot]})
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
	first, last := r.window()
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, slots := range k.Models {
		for _, ks := range slots {
			if id != "" && ks.Index >= first && ks.Index <= last {
				r.add(id, ks.Index, ks.sums)
			}
		}
	}
	return nil
}
