package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/llamatray/llamatray/router/testbed/bench/harness"
	"github.com/llamatray/llamatray/router/testbed/ggufwrite"
)

// peer is one router in the side-by-side run: Llamatray, llama.cpp's router or llama-swap, each with
// room for one model, in front of the same llama-server with the same arguments.
type peer struct {
	name  string
	base  string                       // http://127.0.0.1:PORT
	model func(file string) string     // the name requests give for a model file
	cpu   func() (time.Duration, bool) // the router process's own CPU (not its children's)
	pid   int
	stop  func()
	note  string // how it was started, for the report
	front bool   // in front of the direct llama-server (nginx): the load cells only, no models of its own
}

// peerFiles are the models of the peer run: three small ones for the swaps and the mixed run, and a
// larger one whose long stream the survival check reads.
type peerFiles struct {
	dir        string
	a, b, c    string
	long       string // "" in the swap run
	longTokens int
	room       int      // models loaded at once; 0: one
	keys       []string // more settings of Llamatray's config (the swap run's -swap-llamatray)
}

// files are the model files a router is given.
func (f peerFiles) files() []string {
	out := []string{f.a, f.b, f.c}
	if f.long != "" {
		out = append(out, f.long)
	}
	return out
}

// slots is how many models may be loaded at once.
func (f peerFiles) slots() int { return max(f.room, 1) }

func writePeerModels(dir string) (peerFiles, error) {
	f := peerFiles{dir: dir, longTokens: 1000}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return f, err
	}
	for i, p := range []*string{&f.a, &f.b, &f.c} {
		name := fmt.Sprintf("peer-%c", 'a'+i)
		*p = filepath.Join(dir, name+".gguf")
		if err := ggufwrite.WriteLlama(*p, ggufwrite.LlamaOptions{Width: 64, Blocks: 2, Seed: int64(i + 1), Name: name}); err != nil {
			return f, err
		}
	}
	// Wide enough that its 1000 tokens take seconds on one thread: another model's request arrives
	// while the stream runs.
	f.long = filepath.Join(dir, "peer-long.gguf")
	if err := ggufwrite.WriteLlama(f.long, ggufwrite.LlamaOptions{Width: 256, Blocks: 4, Seed: 9, Name: "peer-long"}); err != nil {
		return f, err
	}
	return f, nil
}

// keysNote is ", `k = v`" for each more setting.
func keysNote(keys []string) string {
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(", `" + k + "`")
	}
	return b.String()
}

// baseName is the model name llama.cpp's router and the llama-swap configuration give a file.
func baseName(file string) string { return strings.TrimSuffix(filepath.Base(file), ".gguf") }

func startLlamatrayPeer(ctx context.Context, bin, llamaServer string, f peerFiles, tmp string) (*peer, error) {
	dir := filepath.Join(tmp, "llamatray-peer")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	p, err := harness.StartProcess(ctx, bin, harness.ProcessConfig{ModelDir: f.dir, LlamaServer: llamaServer, Args: []string{"-t", "1"}, MaxLoaded: f.slots(), Keys: f.keys}, dir)
	if err != nil {
		return nil, err
	}
	ids := map[string]string{}
	for _, file := range f.files() {
		id, err := p.ModelID(ctx, file)
		if err != nil {
			p.Stop()
			return nil, err
		}
		ids[file] = id
	}
	return &peer{name: "Llamatray", base: p.Base, model: func(file string) string { return ids[file] }, cpu: p.CPU, pid: p.PID, stop: p.Stop,
		note: fmt.Sprintf("`llamatray serve`, `max_loaded = %d`%s, `[defaults] ctx_size = 2048, args = [\"-t\", \"1\"]`", f.slots(), keysNote(f.keys))}, nil
}

func startLlamaCppRouter(ctx context.Context, llamaServer string, f peerFiles, tmp string) (*peer, error) {
	port, err := harness.FreePort()
	if err != nil {
		return nil, err
	}
	argv := []string{llamaServer, "--models-dir", f.dir, "--models-max", strconv.Itoa(f.slots()), "-c", "2048", "-t", "1", "--host", "127.0.0.1", "--port", strconv.Itoa(port)}
	d, _, err := harness.StartServer(ctx, argv, nil, fmt.Sprintf("http://127.0.0.1:%d", port), filepath.Join(tmp, "llamacpp-router.log"))
	if err != nil {
		return nil, fmt.Errorf("llama.cpp's router: %w", err)
	}
	return &peer{name: "llama.cpp router", base: d.URL, model: baseName, cpu: d.CPU, pid: d.PID, stop: d.Stop,
		note: fmt.Sprintf("`llama-server --models-dir DIR --models-max %d -c 2048 -t 1` (the same binary)", f.slots())}, nil
}

func startLlamaSwap(ctx context.Context, swap, llamaServer string, f peerFiles, tmp string) (*peer, error) {
	port, err := harness.FreePort()
	if err != nil {
		return nil, err
	}
	var conf strings.Builder
	conf.WriteString("healthCheckTimeout: 60\nlogLevel: warn\nmodels:\n")
	for _, file := range f.files() {
		fmt.Fprintf(&conf, "  %q:\n    cmd: %s -m %s -c 2048 -t 1 --host 127.0.0.1 --port ${PORT}\n", baseName(file), llamaServer, file)
	}
	room := "one model at a time (its default)"
	if f.slots() == 2 { // any two of the three: its matrix engine
		a, b, c := baseName(f.a), baseName(f.b), baseName(f.c)
		fmt.Fprintf(&conf, "routing:\n  router:\n    use: matrix\n    settings:\n      matrix:\n        sets:\n          pairs: \"(%s & %s) | (%s & %s) | (%s & %s)\"\n", a, b, a, c, b, c)
		room = "any two of the three at once (its matrix engine)"
	}
	path := filepath.Join(tmp, "llama-swap.yaml")
	if err := os.WriteFile(path, []byte(conf.String()), 0o600); err != nil {
		return nil, err
	}
	argv := []string{swap, "-config", path, "-listen", fmt.Sprintf("127.0.0.1:%d", port)}
	d, _, err := harness.StartServer(ctx, argv, nil, fmt.Sprintf("http://127.0.0.1:%d", port), filepath.Join(tmp, "llama-swap.log"))
	if err != nil {
		return nil, fmt.Errorf("llama-swap: %w", err)
	}
	return &peer{name: "llama-swap", base: d.URL, model: baseName, cpu: d.CPU, pid: d.PID, stop: d.Stop,
		note: "`llama-swap -config FILE` (" + swapVersion(ctx, swap) + "), " + room + ", each `llama-server -m FILE -c 2048 -t 1`"}, nil
}

// swapVersion is what `llama-swap -version` prints, in one line.
func swapVersion(ctx context.Context, bin string) string {
	out, err := exec.CommandContext(ctx, bin, "-version").Output()
	if err != nil {
		return "version unknown"
	}
	return strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0])
}

// errNoSwap says where to get llama-swap.
var errNoSwap = errors.New("no llama-swap binary: build it from its source (github.com/mostlygeek/llama-swap, tag v250: `git checkout v250 && go build -ldflags '-X main.version=v250' -o llama-swap .`) and pass LLAMA_SWAP=PATH or -llama-swap PATH")
