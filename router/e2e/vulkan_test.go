package e2e

import (
	"context"
	"fmt"
	"maps"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/engine"
	"github.com/llamatray/llamatray/router/testbed"
	"github.com/llamatray/llamatray/router/testbed/ggufwrite"
)

// A real device: llama-server with Debian's Vulkan backend and Mesa's lavapipe (`make
// llama-server-vulkan`; LLAMA_SERVER_VULKAN is its wrapper) has one device, Vulkan0. lavapipe reports
// host memory as the device's, so the device gets a budget in the configuration
// ([device_memory_limit]). Two models whose device buffers together exceed it (-ngl 99) never run
// side by side: the second evicts the first. The footprint learned per device is what the child's
// own buffer lines say. A small model that fits beside one of them starts beside it.
//
// On a real GPU (scripts/gpu-check.sh) the same test runs with LLAMA_SERVER_GPU (a CUDA or ROCm
// build), LLAMATRAY_GPU_DEVICE (CUDA0), LLAMATRAY_GPU_LIMIT_MIB (the device's budget) and
// LLAMATRAY_GPU_BIG / LLAMATRAY_GPU_SMALL (model shapes WIDTHxBLOCKS) at real sizes.
func TestGPUDeviceBudget(t *testing.T) {
	bin := os.Getenv("LLAMA_SERVER_VULKAN")
	if gpu := os.Getenv("LLAMA_SERVER_GPU"); gpu != "" {
		bin = gpu
	}
	if bin == "" {
		t.Skip("LLAMA_SERVER_VULKAN not set: run `make e2e-vulkan` to fetch llama-server with a Vulkan device (lavapipe) and run this test")
	}
	t.Setenv("LLAMA_SERVER", bin)
	dev := envOr("LLAMATRAY_GPU_DEVICE", "Vulkan0")
	limit := int64(envInt(t, "LLAMATRAY_GPU_LIMIT_MIB", 80)) << 20 // each big model holds about 51 MiB on the device, the small one about 14
	bigShape, smallShape := envShape(t, "LLAMATRAY_GPU_BIG", 512, 2), envShape(t, "LLAMATRAY_GPU_SMALL", 128, 2)
	shapes := map[string]ggufwrite.LlamaOptions{"big1": bigShape, "big2": bigShape, "small": smallShape}
	in := startModels(t, func(id string) ggufwrite.LlamaOptions { return shapes[id] }, []string{"big1", "big2", "small"}, func(c *config.Config) {
		c.DeviceMemoryLimit = map[string]config.Size{dev: config.Size(limit)}
		ngl := 99
		c.Defaults.GPULayers = &ngl
		c.Defaults.Args = []string{"-t", "1", "-lv", "4"} // -lv 4: the buffer report
		c.QueueTimeout = config.Duration(5 * time.Minute)
		c.LoadTimeout = config.Duration(5 * time.Minute) // a cold shader cache takes about a minute
		c.IdleSleep, c.IdleUnload = config.Never, config.Never
	})
	eng := in.svc.Engine()
	b := eng.Budget()
	if len(b.Devices) != 1 || b.Devices[0].Name != dev || b.Devices[0].Limit != limit {
		t.Fatalf("devices %+v, want %s with its configured limit", b.Devices, dev)
	}
	t.Logf("device: %s (%s), %d MiB reported, budget %d MiB", b.Devices[0].Name, b.Devices[0].Description, b.Devices[0].Total>>20, b.Devices[0].Limit>>20)

	// Every 50 ms: never both big models on the device, never more held on it than its budget.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var violations []string
	mostHeld := int64(0)
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			on := map[string]bool{}
			for _, m := range eng.Models() {
				on[m.ID] = m.State == engine.StateLoading || m.State == engine.StateLoaded || m.State == engine.StateSleeping
			}
			used := eng.Budget().Devices[0].Used
			mu.Lock()
			mostHeld = max(mostHeld, used)
			if on["big1"] && on["big2"] {
				violations = append(violations, "big1 and big2 both on the device")
			}
			if used > limit {
				violations = append(violations, fmt.Sprintf("%d MiB held on %s over its %d MiB budget", used>>20, dev, limit>>20))
			}
			mu.Unlock()
		}
	}()
	ctx := context.Background()
	// load loads id and answers one chat with it; the child's buffer lines are read right after the
	// load, before requests push them out of its log tail.
	load := func(id string) (time.Duration, []string) {
		t.Helper()
		t0 := time.Now()
		if err := eng.Load(ctx, id); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		took := time.Since(t0)
		logs := eng.Logs(id)
		if code, body, err := in.chat(ctx, id, false, 4); err != nil || code != 200 {
			t.Fatalf("%s: %d %v %s", id, code, err, body)
		}
		return took, logs
	}
	learned := func(id string) map[string]int64 {
		t.Helper()
		var got map[string]int64
		testbed.WaitFor(t, 30*time.Second, id+"'s footprint learned per device", func() bool {
			got = in.state(id).LearnedGPU
			return len(got) > 0
		})
		return got
	}
	checkLines := func(id string, logs []string) int64 {
		t.Helper()
		got := learned(id)
		want := deviceLines(logs)
		if !maps.Equal(got, want) {
			t.Fatalf("%s: learned per device %v, the child's buffer lines say %v", id, got, want)
		}
		t.Logf("%s: learned %s %.2f MiB = the child's lines (%.2f MiB)", id, dev, float64(got[dev])/(1<<20), float64(want[dev])/(1<<20))
		return got[dev]
	}

	d1, logs := load("big1")
	big1 := checkLines("big1", logs)
	d2, logs := load("big2") // does not fit beside big1: big1 (idle) is evicted first
	if st := in.state("big1"); st.State != engine.StateUnloaded {
		t.Fatalf("big1 is %s after big2 loaded", st.State)
	}
	big2 := checkLines("big2", logs)
	if big1+big2 <= limit {
		t.Fatalf("the two big models hold %d MiB together, within the %d MiB budget: the test proves nothing", (big1+big2)>>20, limit>>20)
	}
	d3, logs := load("small") // fits beside big2
	small := checkLines("small", logs)
	if st := in.state("big2"); st.State != engine.StateLoaded {
		t.Fatalf("big2 is %s: the small model did not start beside it", st.State)
	}
	if big2+small > limit {
		t.Fatalf("big2 and small hold %d MiB together, over the budget", (big2+small)>>20)
	}
	close(stop)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(violations) > 0 {
		t.Fatalf("%d violations, first: %s", len(violations), violations[0])
	}
	t.Logf("figures: budget %d MiB; big1 %.1f MiB (loaded in %s), big2 %.1f MiB (%s, after evicting big1), small %.1f MiB (%s, beside big2); most held on %s %.1f MiB",
		limit>>20, mib(big1), d1.Round(time.Millisecond), mib(big2), d2.Round(time.Millisecond), mib(small), d3.Round(time.Millisecond), dev, mib(mostHeld))
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

// deviceLine is one of llama.cpp's buffer lines for a device other than host memory, e.g.
// "llama_kv_cache:    Vulkan0 KV buffer size =     2.00 MiB" (read here on its own, apart from the
// child package's parser, so the two are checked against each other).
var deviceLine = regexp.MustCompile(`\b((?:Vulkan|CUDA|ROCm|MTL|SYCL)\d+)\s+(?:model|KV|RS|output|compute) buffer size\s*=\s*([0-9.]+) MiB`)

// deviceLines sums a child's buffer lines per device, of its last pass (a model buffer line after
// the KV or compute ones starts the report over).
func deviceLines(logs []string) map[string]int64 {
	out := map[string]int64{}
	seenLater := false
	for _, l := range logs {
		m := deviceLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		isModel := regexp.MustCompile(`\smodel buffer`).MatchString(l)
		if isModel && seenLater {
			out, seenLater = map[string]int64{}, false
		}
		if !isModel {
			seenLater = true
		}
		f, _ := strconv.ParseFloat(m[2], 64)
		out[m[1]] += int64(f * (1 << 20))
	}
	return out
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive number", name, v)
	}
	return n
}

// envShape reads a model shape WIDTHxBLOCKS (e.g. 2048x16).
func envShape(t *testing.T, name string, width, blocks int) ggufwrite.LlamaOptions {
	if v := os.Getenv(name); v != "" {
		w, b, ok := strings.Cut(v, "x")
		var err1, err2 error
		width, err1 = strconv.Atoi(w)
		blocks, err2 = strconv.Atoi(b)
		if !ok || err1 != nil || err2 != nil || width <= 0 || blocks <= 0 {
			t.Fatalf("%s=%q: want WIDTHxBLOCKS, e.g. 2048x16", name, v)
		}
	}
	return ggufwrite.LlamaOptions{Width: width, Blocks: blocks}
}
