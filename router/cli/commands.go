package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/llamatray/llamatray/router/catalog"
	"github.com/llamatray/llamatray/router/client"
	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/service"
	"github.com/llamatray/llamatray/router/wire"
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
		if err := parseFlags(f.fs, args); err != nil {
			return nil, err
		}
		if f.fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, f.fs.Arg(0))
		args = f.fs.Args()[1:]
	}
}

func (f *clientFlags) client() *client.Client {
	return clientOf(fileConfig(f.configPath), f.addr, f.apiKey)
}

// clientOf is a client of the instance at addr with API key key, by default those cfg gives.
func clientOf(cfg config.Config, addr, key string) *client.Client {
	c := client.New(cmp.Or(addr, cfg.Listen))
	c.APIKey = key
	if key == "" && len(cfg.APIKeys) > 0 {
		c.APIKey = cfg.APIKeys[0]
	}
	return c
}

func runPS(args []string, env Env) error {
	f := newClientFlags("ps", env, false)
	asJSON := f.fs.Bool("json", false, "print the models as JSON: the objects of GET /models \"data\"")
	pos, err := f.parse(args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError{errors.New("usage: llamatray ps [--json]")}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := f.client()
	models, err := c.Models(ctx)
	if err != nil {
		return notRunning(c, err)
	}
	running := []wire.Model{}
	for _, m := range models {
		if strings.HasPrefix(m.OwnedBy, "peer:") {
			continue // another machine's (llamatray peer list shows them)
		}
		if m.Status.Value != "unloaded" || m.Status.Queued > 0 {
			running = append(running, m)
		}
	}
	if *asJSON {
		return printJSON(env.Stdout, running)
	}
	if len(running) == 0 {
		fmt.Fprintln(env.Stdout, "No model is loaded.")
		return nil
	}
	_, err = io.WriteString(env.Stdout, psTable(running, time.Now()))
	return err
}

// psTable is ps's table of the models running. The rows are aligned on their own, then a waiting
// model's reason goes on a line under its row: a line without cells would end tabwriter's columns
// and misalign the rows after it.
func psTable(running []wire.Model, now time.Time) string {
	var table strings.Builder
	tw := tabwriter.NewWriter(&table, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MODEL\tSTATE\tACTIVE\tQUEUED\tMEMORY\tLAST USED\tUNTIL")
	for _, m := range running {
		st := m.Status
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
	tw.Flush()
	lines := strings.SplitAfter(table.String(), "\n")
	var out strings.Builder
	out.WriteString(lines[0])
	for i, m := range running {
		out.WriteString(lines[i+1])
		if w := m.Status.Wait; w != nil && w.Text != "" {
			out.WriteString("  ↳ " + w.Text + "\n")
		}
		if m.Meta != nil && m.Meta.EstimateError != "" && m.Status.MemoryBytes == 0 {
			out.WriteString("  ↳ " + m.Meta.EstimateError + "\n")
		}
	}
	return out.String()
}

// printJSON writes v as indented JSON.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func runLoad(args []string, env Env) error {
	return onModel(args, env, "load", "load ID", 30*time.Minute, "loaded",
		func(ctx context.Context, c *client.Client, id string, _ bool) error { return c.Load(ctx, id) })
}

func runUnload(args []string, env Env) error {
	return onModel(args, env, "unload", "unload ID [--force]", 30*time.Minute, "unloaded",
		func(ctx context.Context, c *client.Client, id string, force bool) error {
			return c.Unload(ctx, id, force)
		})
}

// runPin pins (or with unpin, unpins) a model in the running instance, which saves the choice in
// its configuration file: the same pin as the tray's and POST /models/pin.
func runPin(args []string, env Env, pinned bool) error {
	name := "pin"
	if !pinned {
		name = "unpin"
	}
	return onModel(args, env, name, name+" ID", 30*time.Second, name+"ned (saved in the configuration)",
		func(ctx context.Context, c *client.Client, id string, _ bool) error { return c.Pin(ctx, id, pinned) })
}

// onModel runs command name of the running instance on the one model args give (act, within
// timeout; --force for unload), then says done.
func onModel(args []string, env Env, name, usage string, timeout time.Duration, done string, act func(context.Context, *client.Client, string, bool) error) error {
	f := newClientFlags(name, env, name == "unload")
	pos, err := f.parse(args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{errors.New("usage: llamatray " + usage)}
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c := f.client()
	if err := act(ctx, c, pos[0], f.force); err != nil {
		return notRunning(c, err)
	}
	fmt.Fprintf(env.Stdout, "%s %s\n", pos[0], done)
	return nil
}

// runModels prints the models with their memory estimates. When an instance is running at the
// configured address (and no flag changes what it would show), they are the instance's own, as
// GET /models gives them, with their state. Otherwise the service's view is built here by the
// same code (service.Inspect), so the estimates are the ones the instance would give.
func runModels(args []string, env Env) error {
	f := newServeFlags("models", env.Stderr)
	asJSON := f.fs.Bool("json", false, "print the models as JSON: the objects of GET /models \"data\"")
	if err := f.parse(args); err != nil {
		return err
	}
	cfg, path, err := loadConfig(f)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	models, dirs, warnings, live := instanceModels(ctx, f, cfg)
	if !live {
		views, w, err := service.Inspect(ctx, cfg, service.Options{ConfigPath: path, Logger: discardLogger()})
		if err != nil {
			return err
		}
		now := time.Now()
		models, dirs, warnings = make([]wire.Model, 0, len(views)), cfg.ModelDirsResolved(), w
		for _, v := range views {
			models = append(models, v.Wire(now))
		}
	}
	for _, w := range warnings {
		fmt.Fprintf(env.Stderr, "skipped: %s\n", w)
	}
	if len(models) == 0 {
		fmt.Fprintf(env.Stderr, "no GGUF models found in: %s\n", strings.Join(dirs, ", "))
	}
	if *asJSON {
		return printJSON(env.Stdout, models)
	}
	return printModels(env.Stdout, models, live)
}

// printModels is the models command's table of models (with their state when live), then the
// models whose estimate failed.
func printModels(w io.Writer, models []wire.Model, live bool) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	header := "ID\tARCH\tPARAMS\tQUANT\tSIZE\tCONTEXT\tCTX\tEST. MEMORY" // CONTEXT: trained; CTX: what it runs with (a variant's own)
	if live {
		header += "\tSTATE"
	}
	fmt.Fprintln(tw, header)
	for _, m := range models {
		meta := m.Meta
		if meta == nil {
			meta = &wire.ModelMeta{}
		}
		line := fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s", m.ID, orDash(meta.Architecture), orDash(catalog.ParamsLabel(meta.Parameters)),
			orDash(meta.Quantization), humanBytes(meta.SizeBytes), meta.ContextLength, m.CtxSize, humanBytes(m.Status.MemoryEstimateBytes))
		if live {
			line += "\t" + m.Status.Value
		}
		fmt.Fprintln(tw, line)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, m := range models {
		if m.Meta != nil && m.Meta.EstimateError != "" {
			fmt.Fprintf(w, "%s: %s (the need shown is its file size)\n", m.ID, m.Meta.EstimateError)
		}
	}
	return nil
}

// instanceModels asks the instance at the configured address for its models, its model folders
// and the files it skipped. live is false when none answers, or when a flag other than --config,
// --addr or --json was given: then the caller shows what an instance with those flags would.
func instanceModels(ctx context.Context, f *serveFlags, cfg config.Config) (models []wire.Model, dirs, warnings []string, live bool) {
	for name := range f.set {
		if name != "config" && name != "addr" && name != "json" {
			return nil, nil, nil, false
		}
	}
	c := clientOf(cfg, "", "")
	pctx, pc := context.WithTimeout(ctx, 500*time.Millisecond)
	defer pc()
	if c.Ping(pctx) != nil {
		return nil, nil, nil, false
	}
	models, err := c.Models(ctx)
	if err != nil {
		return nil, nil, nil, false
	}
	if st, err := c.Status(ctx); err == nil && st.Setup != nil {
		dirs, warnings = st.Setup.ModelDirs, st.Setup.CatalogWarnings
	}
	return models, dirs, warnings, true
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
