package e2e

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/child"
	"github.com/llamatray/llamatray/router/testbed"
	"github.com/llamatray/llamatray/router/testbed/ggufwrite"
)

// The real llama-server, at the verbosity that prints its buffer report (-lv 4), tells its child
// supervisor what it allocated per device; on this CPU-only machine all of it is host memory, and
// about the model file's size at least.
func TestChildReportsDeviceBuffers(t *testing.T) {
	bin := testbed.RealLlamaServer(t)
	path := filepath.Join(t.TempDir(), "alpha.gguf")
	if err := ggufwrite.WriteLlama(path, ggufwrite.LlamaOptions{Width: 512, Blocks: 2, Seed: 1, Name: "alpha"}); err != nil {
		t.Fatal(err)
	}
	ready := make(chan child.Event, 1)
	c, err := child.Start(child.Spec{Model: "alpha", Binary: bin, Args: []string{"-m", path, "-c", "512", "-t", "1", "-lv", "4"},
		LoadTimeout: time.Minute, StopTimeout: 5 * time.Second},
		func(ev child.Event) {
			if ev.Kind == child.Ready || ev.Kind == child.Exited {
				select {
				case ready <- ev:
				default:
				}
			}
		})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { c.Stop(false); <-c.Done() }()
	ev := <-ready
	if ev.Kind != child.Ready {
		t.Fatalf("child exited: %v %v", ev.Err, ev.LogTail)
	}
	host := ev.Buffers[child.HostDevice]
	if len(ev.Buffers) != 1 || host < 8<<20 {
		t.Fatalf("buffers %v, want host memory only, at least the KV cache and weights", ev.Buffers)
	}
	t.Logf("device buffers: %v", ev.Buffers)
}
