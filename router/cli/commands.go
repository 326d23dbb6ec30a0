package cli

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/llamatray/llamatray/router/catalog"
	"github.com/llamatray/llamatray/router/client"
	"github.com/llamatray/llamatray/router/config"
)

// clientFlags are the flags of commands that talk to a running instance.
type clientFlags struct {
	fs         *flag.FlagSet
	addr       string
	configPath string
	apiKey     string
	force      bool
}

func newClientFlags(name string, env Env, withForce bool) *clientFlags {
	f := &clientFlags{fs: flag.NewFlagSet(name, flag.ContinueOnError)}
	f.fs.SetOutput(env.Stderr)
	f.fs.StringVar(&f.addr, "addr", "", "address of the running instance (default: the config's listen)")
	f.fs.StringVar(&f.configPath, "config", "", "configuration `file`")
	f.fs.StringVar(&f.apiKey, "api-key", "", "API key, when the instance requires one (default: the config's first key)")
	if withForce {
		f.fs.BoolVar(&f.force, "force", false, "stop at once, cutting in-flight requests")
	}
	return f
}

// parse accepts flags before and after the positional arguments.
func (f *clientFlags) parse(args []string) ([]string, error) {
	var pos []string
	for {
		if err := f.fs.Parse(args); err != nil {
			if err == flag.ErrHelp {
				return nil, errHelp
			}
			return nil, usageError{err}
		}
		if f.fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, f.fs.Arg(0))
		args = f.fs.Args()[1:]
	}
}

func (f *clientFlags) client() *client.Client {
	path := f.configPath
	if path == "" {
		path, _ = config.Path()
	}
	cfg := config.Default()
	if path != "" {
		if c, err := config.Parse(path, readFileOrEmpty(path)); err == nil {
			cfg = c
		}
	}
	addr := f.addr
	if addr == "" {
		addr = cfg.Listen
	}
	c := client.New(addr)
	c.APIKey = f.apiKey
	if c.APIKey == "" && len(cfg.APIKeys) > 0 {
		c.APIKey = cfg.APIKeys[0]
	}
	return c
}

func runPS(args []string, env Env) error {
	f := newClientFlags("ps", env, false)
	pos, err := f.parse(args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError{fmt.Errorf("ps takes no arguments")}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	models, err := f.client().Models(ctx)
	if err != nil {
		return fmt.Errorf("is Llamatray running? %w", err)
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MODEL\tSTATE\tACTIVE\tQUEUED\tMEMORY\tLAST USED\tUNTIL")
	now := time.Now()
	for _, m := range models {
		st := m.Status
		if st.Value == "unloaded" && st.Queued == 0 {
			continue
		}
		state := st.Value
		if st.Draining {
			state += " (draining)"
		}
		if st.Pinned {
			state += " (pinned)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%s\n", m.ID, state, st.ActiveRequests, st.Queued,
			bytesOr(st.MemoryBytes, st.MemoryEstimateBytes), ago(now, st.LastUsed), until(now, st.UnloadAt))
	}
	return tw.Flush()
}

func runLoad(args []string, env Env) error {
	f := newClientFlags("load", env, false)
	pos, err := f.parse(args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{fmt.Errorf("usage: llamatray load MODEL")}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	if err := f.client().Load(ctx, pos[0]); err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "%s loaded\n", pos[0])
	return nil
}

func runUnload(args []string, env Env) error {
	f := newClientFlags("unload", env, true)
	pos, err := f.parse(args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{fmt.Errorf("usage: llamatray unload MODEL [--force]")}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	if err := f.client().Unload(ctx, pos[0], f.force); err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "%s unloaded\n", pos[0])
	return nil
}

// runModels prints the catalog. When an instance is running at the configured address it shows each
// model's state too; otherwise it scans the folders itself.
func runModels(args []string, env Env) error {
	f := newServeFlags("models", env.Stderr)
	if err := f.parse(args); err != nil {
		return err
	}
	cfg, _, err := loadConfig(f)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	states := map[string]string{}
	if !f.set["models-dir"] {
		c := client.New(cfg.Listen)
		if len(cfg.APIKeys) > 0 {
			c.APIKey = cfg.APIKeys[0]
		}
		pctx, pc := context.WithTimeout(ctx, 500*time.Millisecond)
		if c.Ping(pctx) == nil {
			if ms, err := c.Models(ctx); err == nil {
				for _, m := range ms {
					states[m.ID] = m.Status.Value
				}
			}
		}
		pc()
	}
	cat := catalog.New(catalog.Options{
		Dirs: cfg.ModelDirsResolved(),
		Params: func(id string) catalog.EstimateParams {
			ms := cfg.ModelSettings(id)
			return catalog.EstimateParams{ContextSize: max(ms.CtxSize, 512), Parallel: cfg.Defaults.Parallel}
		},
		Aliases: func(id string) []string { return cfg.ModelSettings(id).Aliases },
		Hidden:  func(id string) bool { return cfg.ModelSettings(id).Hidden },
		Logger:  discardLogger(),
	})
	if err := cat.Scan(ctx); err != nil {
		return err
	}
	for _, w := range cat.Warnings() {
		fmt.Fprintf(env.Stderr, "skipped: %s\n", w)
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	header := "ID\tARCH\tPARAMS\tQUANT\tSIZE\tCONTEXT\tEST. MEMORY"
	if len(states) > 0 {
		header += "\tSTATE"
	}
	fmt.Fprintln(tw, header)
	for _, m := range cat.Models() {
		line := fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%d\t%s", m.ID, m.Architecture, params(m.Parameters), m.Quantization,
			humanBytes(m.SizeBytes), m.ContextLength, humanBytes(m.Estimate.RAM+m.Estimate.VRAM))
		if len(states) > 0 {
			st := states[m.ID]
			if st == "" {
				st = "-"
			}
			line += "\t" + st
		}
		fmt.Fprintln(tw, line)
	}
	if len(cat.Models()) == 0 {
		fmt.Fprintf(env.Stderr, "no GGUF models found in: %s\n", strings.Join(cfg.ModelDirsResolved(), ", "))
	}
	return tw.Flush()
}
