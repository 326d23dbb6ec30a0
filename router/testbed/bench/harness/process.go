package harness

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/llamatray/llamatray/router/client"
)

// BuildLlamatray builds the llamatray command (the module's root package) into out. It runs from
// the current folder, which `go run ./router/testbed/bench` makes the module root.
func BuildLlamatray(ctx context.Context, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, ".")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build -o %s .: %w\n%s", out, err, b)
	}
	return nil
}

// ProcessConfig is what a `llamatray serve` of the harness is started with.
type ProcessConfig struct {
	ModelDir    string
	LlamaServer string
	Args        []string // [defaults].args for every child
	Env         []string // more environment, e.g. GOMAXPROCS=1
	MaxLoaded   int      // max_loaded, 0 = the default
	Keys        []string // more top-level settings, one `key = value` line each
}

// Process is Llamatray running as its own process (`llamatray serve`), as users run it.
type Process struct {
	*client.Client
	*server
	PID int
}

// toml quotes s as a TOML basic string.
func toml(s string) string { return strconv.Quote(s) }

// StartProcess writes a config file into dir and starts `bin serve --config FILE` with its output in
// dir/llamatray.log: a free loopback port, only cfg.ModelDir, context 2048, no idle sleep or unload,
// warnings only in the log. It returns once /health answers.
func StartProcess(ctx context.Context, bin string, cfg ProcessConfig, dir string) (*Process, error) {
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	args := make([]string, len(cfg.Args))
	for i, a := range cfg.Args {
		args[i] = toml(a)
	}
	conf := fmt.Sprintf("listen = %s\nmodel_dirs = [%s]\nscan_default_dirs = false\nllama_server = %s\n"+
		"idle_sleep = \"0s\"\nidle_unload = \"0s\"\nlog_level = \"warn\"\n\n[defaults]\nctx_size = 2048\nargs = [%s]\n",
		toml(fmt.Sprintf("127.0.0.1:%d", port)), toml(cfg.ModelDir), toml(cfg.LlamaServer), strings.Join(args, ", "))
	if cfg.MaxLoaded > 0 {
		conf = fmt.Sprintf("max_loaded = %d\n", cfg.MaxLoaded) + conf
	}
	for _, k := range cfg.Keys {
		conf = k + "\n" + conf
	}
	confPath := filepath.Join(dir, "llamatray.toml")
	if err := os.WriteFile(confPath, []byte(conf), 0o600); err != nil {
		return nil, fmt.Errorf("llamatray config: %w", err)
	}
	logPath := filepath.Join(dir, "llamatray.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("llamatray log: %w", err)
	}
	cmd := exec.Command(bin, "serve", "--config", confPath)
	cmd.Env = append(os.Environ(), cfg.Env...)
	srv, err := startServer(cmd, logf)
	if err != nil {
		logf.Close()
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	p := &Process{Client: client.New(fmt.Sprintf("127.0.0.1:%d", port)), server: srv, PID: cmd.Process.Pid}
	deadline := time.Now().Add(time.Minute)
	for {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := p.Ping(pctx)
		cancel()
		if err == nil {
			return p, nil
		}
		select {
		case <-p.done:
			return nil, fmt.Errorf("llamatray exited before it answered: %v (log: %s)", p.err, logPath)
		case <-ctx.Done():
			p.Stop()
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.Stop()
			return nil, fmt.Errorf("llamatray did not answer within a minute: %w (log: %s)", err, logPath)
		}
	}
}

// ChatURL is the router's /v1/chat/completions.
func (p *Process) ChatURL() string { return p.Base + "/v1/chat/completions" }

// ModelID is the ID of the model file at path in the running instance's list.
func (p *Process) ModelID(ctx context.Context, path string) (string, error) {
	models, err := p.Models(ctx)
	if err != nil {
		return "", err
	}
	for _, m := range models {
		if m.Meta != nil && m.Meta.Path == path {
			return m.ID, nil
		}
	}
	return "", fmt.Errorf("no model for %s in llamatray's list", path)
}

// State is the status value ("unloaded", "loaded", …) of model id.
func (p *Process) State(ctx context.Context, id string) (string, error) {
	models, err := p.Models(ctx)
	if err != nil {
		return "", err
	}
	for _, m := range models {
		if m.ID == id {
			return m.Status.Value, nil
		}
	}
	return "", fmt.Errorf("model %s not in llamatray's list", id)
}

// Stop ends Llamatray as a user would (SIGINT: it stops its models, then exits), SIGKILL of its
// process group after 30 s. It waits until the process is reaped.
func (p *Process) Stop() { p.stop(os.Interrupt, 30*time.Second) }

// ProcessCPUOf is the CPU time (user + system) process pid has used so far; ok is false where /proc
// cannot tell (other systems).
func ProcessCPUOf(pid int) (time.Duration, bool) { return procCPU(pid) }
