package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/llamatray/llamatray/router/catalog"
	"github.com/llamatray/llamatray/router/client"
	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/hub"
	"github.com/llamatray/llamatray/router/wire"
)

// runSearch: `llamatray search TEXT` lists GGUF repos on the Hugging Face Hub; `llamatray search
// ORG/REPO` lists that repo's quants with their sizes.
func runSearch(args []string, env Env) error {
	f := newClientFlags("search", env, false)
	limit := f.fs.Int("limit", 20, "most results shown")
	pos, err := f.parse(args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usageError{errors.New("usage: llamatray search TEXT  (or ORG/REPO for its files)")}
	}
	text := strings.Join(pos, " ")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := hub.FromEnv(env.Getenv)
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	if ref, err := hub.ParsePasted(text); err == nil { // ORG/REPO[:QUANT] or a Hub link: that repo's files
		if l, err := c.Files(ctx, ref.Repo); err == nil {
			fmt.Fprintln(tw, "MODEL\tSIZE\tFILES")
			for _, q := range l.Quants {
				files := strconv.Itoa(len(q.Files))
				if q.Mmproj != nil {
					files += " + mmproj"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\n", hub.Ref{Repo: l.Repo, Quant: q.Name}, humanBytes(q.Size), files)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			fmt.Fprintf(env.Stderr, "get one with: llamatray pull %s:QUANT\n", l.Repo)
			return nil
		}
	}
	repos, err := c.Search(ctx, text, *limit)
	if err != nil {
		return err
	}
	if len(repos) == 0 {
		fmt.Fprintf(env.Stderr, "no GGUF models on %s match %q\n", c.Endpoint, text)
		return nil
	}
	fmt.Fprintln(tw, "REPO\tDOWNLOADS\tLIKES\tACCESS")
	for _, r := range repos {
		access := "open"
		if r.Gated {
			access = "gated (needs HF_TOKEN)"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", r.ID, r.Downloads, r.Likes, access)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(env.Stderr, "see a repo's files with: llamatray search ORG/REPO; get one with: llamatray pull ORG/REPO:QUANT")
	return nil
}

// runPull: `llamatray pull ORG/REPO[:QUANT]` downloads through the running instance, or
// directly when none runs, with a progress bar. It succeeds only once every file is verified and
// the model is listed under its name. Ctrl-C (or SIGTERM) never deletes what came: through an
// instance the download goes on there; directly it pauses, and the next pull resumes it.
func runPull(args []string, env Env) error {
	f := newClientFlags("pull", env, false)
	pos, err := f.parse(args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{errors.New("usage: llamatray pull ORG/REPO[:QUANT]")}
	}
	ref, err := hub.ParsePasted(pos[0])
	if err != nil {
		return usageError{err}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	m, err := f.hubModels(ctx)
	if err != nil {
		return err
	}
	return m.pull(ctx, ref, newProgressBar(env.Stderr), env)
}

// hubModels is what pull and rm act on: the running instance, or the Hub cache directly (the
// same choice the llama-server commands make, clientFlags.running).
type hubModels interface {
	pull(ctx context.Context, ref hub.Ref, bar *progressBar, env Env) error
	remove(ctx context.Context, name string) (wire.RemoveAnswer, error)
}

func (f *clientFlags) hubModels(ctx context.Context) (hubModels, error) {
	c, _, err := f.running(ctx)
	switch {
	case err != nil:
		return nil, err
	case c != nil:
		return viaInstance{c}, nil
	}
	return directModels{cfg: fileConfig(f.configPath)}, nil
}

// downloadedLine is what a pull that ended well prints: the model and the ID it is listed as.
const downloadedLine = "%s: downloaded, verified (sha256) and listed as %s\n"

// errDetached ends a pull the user interrupted while the running instance downloads.
var errDetached = errors.New("interrupted; the download goes on in the running Llamatray")

func (v viaInstance) pull(ctx context.Context, ref hub.Ref, bar *progressBar, env Env) error {
	c := v.c
	ectx, cancelEvents := context.WithCancel(ctx)
	defer cancelEvents()
	events, err := c.PullEvents(ectx) // subscribed before the pull starts: no event is missed
	if err != nil {
		return err
	}
	// The request that starts the pull is answered at once; a Ctrl-C meanwhile waits for the answer,
	// so that it detaches from a pull the instance has begun, as a Ctrl-C a moment later does.
	sctx, cancelStart := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	a, err := c.Pull(sctx, ref.String(), tokenFor(c, env))
	cancelStart()
	if err != nil {
		return err
	}
	if a.Status == hub.StateDownloaded {
		fmt.Fprintf(env.Stdout, "%s is already downloaded (model %s)\n", a.Model, a.ID)
		return nil
	}
	detached := func() error {
		bar.done()
		return fmt.Errorf("%s: %w (`llamatray pull %s` follows it again, `llamatray rm %s` cancels it)", a.Model, errDetached, a.Model, a.Model)
	}
	for {
		select {
		case <-ctx.Done():
			return detached()
		case ev, open := <-events:
			if !open && ctx.Err() != nil {
				return detached() // the events' stream ended because of the interrupt, and was picked first
			}
			if !open {
				bar.done()
				return fmt.Errorf("%s: the instance stopped reporting the download", a.Model)
			}
			if !strings.EqualFold(ev.Model, a.Model) {
				continue
			}
			bar.show(a.Model, ev.BytesDone, ev.BytesTotal, ev.BytesPerSecond, time.Duration(ev.ETASeconds*float64(time.Second)))
			switch ev.Status {
			case hub.StateDownloaded:
				bar.done()
				id, err := c.Resolve(ctx, a.Model)
				if err != nil {
					return fmt.Errorf("%s downloaded but not listed: %w", a.Model, err)
				}
				fmt.Fprintf(env.Stdout, downloadedLine, a.Model, id)
				return nil
			case hub.StateFailed, hub.StateCancelled, hub.StatePaused:
				bar.done()
				return errors.New(ev.Error)
			}
		}
	}
}

// tokenFor is the Hub token this shell has (HF_TOKEN, or the token file), for the instance to use
// for this pull; sent only to an instance on this machine, never over the network.
func tokenFor(c *client.Client, env Env) string {
	u, err := url.Parse(c.Base)
	if err != nil {
		return ""
	}
	if ip := net.ParseIP(u.Hostname()); u.Hostname() != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return ""
	}
	return hub.FromEnv(env.Getenv).Token
}

func (v viaInstance) remove(ctx context.Context, name string) (wire.RemoveAnswer, error) {
	return v.c.Remove(ctx, name)
}

// directModels changes the Hub cache itself, when no instance runs.
type directModels struct{ cfg config.Config }

// pull downloads without an instance and checks the catalog lists the model.
func (d directModels) pull(ctx context.Context, ref hub.Ref, bar *progressBar, env Env) error {
	cfg := d.cfg
	cache := hub.Cache{Dir: hub.CacheDir(env.Getenv)}
	listedAs := ""
	m := hub.NewManager(hub.FromEnv(env.Getenv), cache, func(name string, _ []string) error {
		cat := newCatalog(cfg)
		if err := cat.Scan(ctx); err != nil {
			return err
		}
		if cm, ok := cat.Lookup(name); ok {
			listedAs = cm.ID
			return nil
		}
		if !slices.Contains(cat.Dirs(), filepath.Clean(cache.Dir)) {
			return fmt.Errorf("%s was downloaded to %s, which Llamatray does not scan: turn scan_default_dirs on or add that folder to model_dirs", name, cache.Dir)
		}
		return fmt.Errorf("%s was downloaded to %s but is not listed: %v", name, cache.Dir, cat.Warnings())
	}, discardLogger())
	events, unsub := m.Subscribe()
	defer unsub()
	st, err := m.Start(ctx, ref)
	if err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			m.Pause(st.Model)
			end, _ := m.Wait(context.Background(), st.Model)
			bar.done()
			switch end.State {
			case hub.StateDownloaded:
				fmt.Fprintf(env.Stdout, downloadedLine, end.Model, listedAs)
				return nil
			case hub.StatePaused:
				p := end.Progress
				return fmt.Errorf("%s: %w: %s of %s kept in %s; `llamatray pull %s` resumes it", end.Model, hub.ErrPaused, humanBytes(p.Done), humanBytes(p.Total), cache.Dir, end.Model)
			}
			return errors.New(end.Error)
		case ev := <-events:
			p := ev.Progress
			bar.show(ev.Model, p.Done, p.Total, p.Rate, p.Left)
			switch ev.State {
			case hub.StateDownloaded:
				bar.done()
				fmt.Fprintf(env.Stdout, downloadedLine, ev.Model, listedAs)
				return nil
			case hub.StateFailed, hub.StateCancelled:
				bar.done()
				return errors.New(ev.Error)
			}
		}
	}
}

// newCatalog is the catalog of the configured folders, as `llamatray models` scans them.
func newCatalog(cfg config.Config) *catalog.Catalog {
	return catalog.New(catalog.Options{
		Dirs: cfg.ModelDirsResolved(),
		Params: func(id string) catalog.EstimateParams {
			ms := cfg.ModelSettings(id)
			return catalog.EstimateParams{ContextSize: max(ms.CtxSize, 512), Parallel: cfg.Defaults.Parallel}
		},
		Aliases: func(id string) []string { return cfg.ModelSettings(id).Aliases },
		Hidden:  func(id string) bool { return cfg.ModelSettings(id).Hidden },
		// told before the functions above are asked, from the scan's own goroutine
		Renamed: func(r map[string]string) { cfg, _ = cfg.Renamed(r) },
		Logger:  discardLogger(),
	})
}

// runRm: `llamatray rm MODEL` deletes a model pulled from the Hub (through the running instance,
// which unloads it first, or directly), or cancels its download.
func runRm(args []string, env Env) error {
	f := newClientFlags("rm", env, false)
	pos, err := f.parse(args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{errors.New("usage: llamatray rm ID")}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	m, err := f.hubModels(ctx)
	if err != nil {
		return err
	}
	a, err := m.remove(ctx, pos[0])
	switch {
	case err != nil:
		return err
	case a.Status == hub.StateCancelled:
		fmt.Fprintf(env.Stdout, "%s: download cancelled\n", a.Model)
	default:
		fmt.Fprintf(env.Stdout, "%s removed (%d paths)\n", a.ID, len(a.Removed))
	}
	return nil
}

func (d directModels) remove(ctx context.Context, name string) (wire.RemoveAnswer, error) {
	cat := newCatalog(d.cfg)
	if err := cat.Scan(ctx); err != nil {
		return wire.RemoveAnswer{}, err
	}
	m, ok := cat.Lookup(name)
	if !ok {
		return wire.RemoveAnswer{}, unknownModel(name, cat)
	}
	removed, err := hub.RemovePulled(m)
	return wire.RemoveAnswer{Success: err == nil, ID: m.ID, Model: m.HubName, Removed: removed}, err
}
