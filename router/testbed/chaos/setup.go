package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/mem"
	"github.com/llamatray/llamatray/router/testbed"
	"github.com/llamatray/llamatray/router/testbed/bench/harness"
	"github.com/llamatray/llamatray/router/testbed/ggufwrite"
)

// world is a running Llamatray with its models, its log capture and its fault probe.
type world struct {
	tmp    string
	svc    *harness.Service
	cfg    config.Config
	probe  *pressureProbe
	access *accessLog
	logf   *os.File
	models []modelInfo // sorted by learned footprint, smallest first
}

type modelInfo struct {
	id      string
	path    string
	width   int
	size    int64 // file bytes
	learned int64 // footprint learned by the engine
}

// newWorld writes one random llama model per width (blocks deep) into tmp/models and starts
// Llamatray on them with the harness configuration, tuned by tune.
func newWorld(ctx context.Context, tmp, bin string, widths []int, blocks int, tune func(*config.Config)) (*world, error) {
	if err := harness.IsolateXDG(tmp); err != nil {
		return nil, err
	}
	dir := filepath.Join(tmp, "models")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	w := &world{tmp: tmp}
	for i, width := range widths {
		name := fmt.Sprintf("chaos-%c", 'a'+i)
		path := filepath.Join(dir, name+".gguf")
		if err := ggufwrite.WriteLlama(path, ggufwrite.LlamaOptions{Width: width, Blocks: blocks, Seed: int64(i + 1), Name: name}); err != nil {
			return nil, fmt.Errorf("writing %s: %w", path, err)
		}
		fi, err := os.Stat(path)
		if err != nil {
			return nil, err
		}
		w.models = append(w.models, modelInfo{path: path, width: width, size: fi.Size()})
	}
	cfg, err := harness.Config(dir, bin)
	if err != nil {
		return nil, err
	}
	if tune != nil {
		tune(&cfg)
	}
	w.cfg = cfg
	w.logf, err = os.Create(filepath.Join(tmp, "llamatray.log"))
	if err != nil {
		return nil, err
	}
	w.access = newAccessLog(slog.NewTextHandler(w.logf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	w.probe = &pressureProbe{real: mem.Machine()}
	w.svc, err = harness.StartService(ctx, cfg, slog.New(w.access), w.probe)
	if err != nil {
		w.logf.Close()
		return nil, err
	}
	for i := range w.models {
		if w.models[i].id, err = w.svc.ModelID(w.models[i].path); err != nil {
			w.stop(context.Background())
			return nil, err
		}
	}
	return w, nil
}

// stop stops Llamatray (waiting for its children) and closes the log.
func (w *world) stop(ctx context.Context) error {
	err := w.svc.Stop(ctx)
	w.logf.Close()
	return err
}

// ids lists the model IDs.
func (w *world) ids() []string {
	out := make([]string, len(w.models))
	for i, m := range w.models {
		out[i] = m.id
	}
	return out
}

// learnFootprints loads each model through the router (one at a time), serves one chat with it and
// waits until the engine has learned what it holds. The models are then sorted by footprint.
func (w *world) learnFootprints(ctx context.Context, progress io.Writer) error {
	c := harness.NewClient(4)
	defer c.CloseIdleConnections()
	for i := range w.models {
		m := &w.models[i]
		r := harness.Do(ctx, c, harness.Request{URL: w.svc.ChatURL(), Body: harness.ChatBody(m.id, false, 16, 1)})
		if !r.OK() {
			return fmt.Errorf("first load of %s: status %d %s %v %s", m.id, r.Status, r.Code, r.Err, r.Snippet)
		}
		if !testbed.Poll(context.Background(), 30*time.Second, 10*time.Millisecond, func() bool { return w.svc.Status(m.id).LearnedBytes > 0 }) {
			return fmt.Errorf("the engine learned no footprint for %s within 30 s", m.id)
		}
		m.learned = w.svc.Status(m.id).LearnedBytes
		fmt.Fprintf(progress, "chaos: %s (width %d, file %s) holds %s\n", m.id, m.width, harness.MiB(m.size), harness.MiB(m.learned))
	}
	slices.SortFunc(w.models, func(a, b modelInfo) int { return int(a.learned - b.learned) })
	return nil
}

// roomForOne is a memory limit that fits the largest model but no two models together: halfway
// between the largest footprint and the two smallest together. ok is false when the footprints are
// too close for a clear margin (10% of the largest) on both sides.
func roomForOne(learned []int64) (limit int64, ok bool) {
	if len(learned) < 2 {
		return 0, false
	}
	s := slices.Clone(learned)
	slices.Sort(s)
	largest, pair := s[len(s)-1], s[0]+s[1]
	limit = largest + (pair-largest)/2
	margin := largest / 10
	return limit, limit-largest >= margin && pair-limit >= margin
}
