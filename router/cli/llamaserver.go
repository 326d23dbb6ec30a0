package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/llamatray/llamatray/router/client"
	"github.com/llamatray/llamatray/router/locate"
	"github.com/llamatray/llamatray/router/releases"
)

const llamaServerUsage = `Usage:
  llamatray llama-server install [BUILD] [--backend B] [--asset NAME]
                                   download llama.cpp's build for this machine (default: the latest)
  llamatray llama-server list [--available]
                                   installed builds; with --available, what the latest release offers here
  llamatray llama-server use BUILD  switch to an installed build ("previous" rolls back)
  llamatray llama-server update     install the latest build if it is newer (same backend as the one in use)

When Llamatray is running, these go through it (new loads use the new build at once; running models keep
theirs); otherwise they change <data dir>/llama-server directly. --backend is one of cpu, cuda, vulkan,
rocm, hip, metal. LLAMATRAY_RELEASES_URL replaces GitHub's releases API (mirrors, tests).
`

// builds is what the llama-server commands act on: the running instance, or the folder directly.
type builds interface {
	list(ctx context.Context, available bool) (releases.Listing, error)
	install(ctx context.Context, req releases.Request, progress func(releases.Progress)) (releases.Build, error)
	use(ctx context.Context, build string) (releases.Build, error)
}

// viaInstance goes through a running Llamatray.
type viaInstance struct{ c *client.Client }

func (v viaInstance) list(ctx context.Context, available bool) (releases.Listing, error) {
	return v.c.LlamaServers(ctx, available, releases.Latest)
}
func (v viaInstance) install(ctx context.Context, req releases.Request, p func(releases.Progress)) (releases.Build, error) {
	return v.c.InstallLlamaServer(ctx, req, p)
}
func (v viaInstance) use(ctx context.Context, build string) (releases.Build, error) {
	return v.c.UseLlamaServer(ctx, build)
}

// direct changes the folder itself, when no instance runs.
type direct struct{ in *releases.Installer }

func (d direct) list(ctx context.Context, available bool) (releases.Listing, error) {
	var out releases.Listing
	var err error
	if out.Builds, err = d.in.Store.Builds(); err != nil || !available {
		return out, err
	}
	rel, c, err := d.in.Plan(ctx, releases.Request{Build: releases.Latest})
	if err != nil {
		out.AvailableError = err.Error()
		return out, nil
	}
	out.Available = releases.AvailableOf(rel, c)
	return out, nil
}
func (d direct) install(ctx context.Context, req releases.Request, p func(releases.Progress)) (releases.Build, error) {
	return d.in.Install(ctx, req, p)
}
func (d direct) use(_ context.Context, build string) (releases.Build, error) { return d.in.Use(build) }

func runLlamaServer(args []string, env Env) error {
	if done, err := helpFirst(args, llamaServerUsage, "llama-server needs a command: install, list, use or update", env); done {
		return err
	}
	sub, args := args[0], args[1:]
	f := newClientFlags("llama-server "+sub, env, false)
	var req releases.Request
	available := false
	switch sub {
	case "install":
		f.fs.StringVar(&req.Backend, "backend", "", "the `backend` to install: cpu, cuda, vulkan, rocm, hip, metal (default: chosen for this machine)")
		f.fs.StringVar(&req.Asset, "asset", "", "an exact release asset `name` to install")
	case "list":
		f.fs.BoolVar(&available, "available", false, "also show what the latest release offers for this machine")
	case "use", "update":
	default:
		return usageError{fmt.Errorf("unknown llama-server command %q (install, list, use, update)", sub)}
	}
	pos, err := f.parse(args)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	b, via, err := f.builds(ctx)
	if err != nil {
		return err
	}
	switch sub {
	case "install":
		if len(pos) > 1 {
			return usageError{errors.New("usage: llamatray llama-server install [BUILD]")}
		}
		req.Build = releases.Latest
		if len(pos) == 1 {
			req.Build = pos[0]
		}
		return installBuild(ctx, b, via, req, env)
	case "update":
		if len(pos) > 0 {
			return usageError{errors.New("usage: llamatray llama-server update")}
		}
		return installBuild(ctx, b, via, releases.Request{Build: releases.Latest, Update: true}, env)
	case "use":
		if len(pos) != 1 {
			return usageError{errors.New("usage: llamatray llama-server use BUILD")}
		}
		got, err := b.use(ctx, pos[0])
		if err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "using llama.cpp %s (%s) %s%s\n", got.Build, got.Backend, got.Path, via)
		return nil
	default:
		if len(pos) > 0 {
			return usageError{errors.New("usage: llamatray llama-server list [--available]")}
		}
		l, err := b.list(ctx, available)
		if err != nil {
			return err
		}
		printBuilds(env.Stdout, l)
		return nil
	}
}

// builds returns the running instance when one answers, else the folder; via says which, for messages.
func (f *clientFlags) builds(ctx context.Context) (builds, string, error) {
	c, via, err := f.running(ctx)
	switch {
	case err != nil:
		return nil, "", err
	case c != nil:
		return viaInstance{c}, via, nil
	}
	root, err := releases.DefaultRoot()
	if err != nil {
		return nil, "", err
	}
	return direct{in: &releases.Installer{Client: &releases.Client{}, Store: releases.Store{Root: root}, Verify: locate.Version}}, "", nil
}

func installBuild(ctx context.Context, b builds, via string, req releases.Request, env Env) error {
	line := newProgressBar(env.Stdout)
	done := ""
	got, err := b.install(ctx, req, func(p releases.Progress) {
		switch p.Phase {
		case releases.PhaseChosen:
			fmt.Fprintf(env.Stdout, "llama.cpp %s: %s (%s, %s)\n  why: %s\n", p.Build, p.Asset, p.Backend, humanBytes(p.Total), p.Reason)
			fmt.Fprintf(env.Stdout, "  (another build: --backend or --asset; see llamatray llama-server list --available)\n")
		case releases.PhaseDownloading:
			line.show("downloading", p.Done, p.Total, p.BytesPerSecond, time.Duration(p.ETASeconds*float64(time.Second)))
		case releases.PhaseVerified:
			line.done()
			fmt.Fprintf(env.Stdout, "verified %s\n", p.Message)
		case releases.PhaseUnpacking:
			fmt.Fprintf(env.Stdout, "unpacking %s\n", p.Asset)
		case releases.PhaseDone:
			done = p.Message
		}
	})
	line.done()
	if err != nil {
		return err
	}
	if strings.HasPrefix(done, "up to date") || strings.HasPrefix(done, "already") {
		fmt.Fprintf(env.Stdout, "llama.cpp %s (%s) is %s%s\n", got.Build, got.Backend, done, via)
		return nil
	}
	fmt.Fprintf(env.Stdout, "installed llama.cpp %s (%s), version %s\n  %s%s\n", got.Build, got.Backend, got.Version, got.Path, via)
	if l, err := b.list(ctx, false); err == nil && (l.InUse.Source == locate.SourceConfig || l.InUse.Source == locate.SourceEnv) {
		fmt.Fprintf(env.Stdout, "note: the configured llama-server %s is still used (llama_server or $LLAMA_SERVER wins); clear it to use this build\n", l.InUse.Path)
	}
	return nil
}

func printBuilds(w io.Writer, l releases.Listing) {
	if p := l.InUse.Path; p != "" {
		fmt.Fprintf(w, "in use: %s (%s, %s)\n", p, l.InUse.Source, l.InUse.Version)
	}
	if len(l.Builds) == 0 {
		fmt.Fprintln(w, "no llama-server builds installed by Llamatray (llamatray llama-server install)")
	} else {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "BUILD\tBACKEND\tVERSION\tINSTALLED\tASSET")
		for _, b := range l.Builds {
			mark := ""
			if b.Current {
				mark = " *"
			}
			fmt.Fprintf(tw, "%s%s\t%s\t%s\t%s\t%s\n", b.Build, mark, b.Backend, b.Version, b.InstalledAt.Local().Format(time.DateTime), b.Asset)
		}
		tw.Flush()
	}
	if a := l.Available; a != nil {
		fmt.Fprintf(w, "latest release %s for this machine: %s (%s, %s)\n  why: %s\n", a.Build, a.Chosen.Asset, a.Chosen.Backend, humanBytes(a.Chosen.Size), a.Chosen.Reason)
		for _, o := range a.Others {
			fmt.Fprintf(w, "  or: --asset %s (%s, %s)\n", o.Asset, o.Backend, humanBytes(o.Size))
		}
	} else if l.AvailableError != "" {
		fmt.Fprintf(w, "latest release: %s\n", l.AvailableError)
	}
}
