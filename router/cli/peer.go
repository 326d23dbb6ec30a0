package cli

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/envconfig"
	"github.com/llamatray/llamatray/router/wire"
)

const peerUsage = `Usage:
  llamatray peer add URL [--name NAME] [--api-key KEY|-]
                         add another machine's server: another Llamatray, llama-swap, llama.cpp's
                         router, Ollama or any OpenAI-compatible server. Its models are listed here
                         under their own IDs (a local model of the same ID wins; "peer:NAME/ID"
                         always reaches the peer's), and their requests are sent there whole.
                         --api-key is the peer's key, sent to that peer only; "--api-key -" reads
                         it from the standard input's first line, and without --api-key it is
                         taken from $LLAMATRAY_PEER_API_KEY when set (either keeps it out of the
                         process list). NAME defaults to the URL's host and port.
  llamatray peer list [--json]   the peers, with their state and models
  llamatray peer rm NAME         take a peer out
  llamatray peer discover [--json]
                                 other Llamatrays found on the local network (mDNS) that are not
                                 peers yet; none is added until you add it

The running instance is changed when one answers (it reads the peer at once), else the
configuration file. --addr, --config and --instance-key name the instance as other commands do.
`

// runPeer is `llamatray peer add|list|rm`.
func runPeer(args []string, env Env) error {
	if done, err := helpFirst(args, peerUsage, "peer needs add, list or rm", env); done {
		return err
	}
	sub, args := args[0], args[1:]
	f := &clientFlags{fs: flag.NewFlagSet("peer "+sub, flag.ContinueOnError)}
	f.fs.SetOutput(env.Stderr)
	f.fs.Usage = func() { fmt.Fprint(env.Stderr, peerUsage) }
	f.fs.StringVar(&f.addr, "addr", "", "address of the running instance (default: the config's listen)")
	f.fs.StringVar(&f.configPath, "config", "", "configuration `file`")
	f.fs.StringVar(&f.apiKey, "instance-key", "", "API key of the running instance, when it requires one (default: the config's first key)")
	var name, key string
	var asJSON bool
	switch sub {
	case "add":
		f.fs.StringVar(&name, "name", "", "the peer's name (default: from the URL's host and port)")
		f.fs.StringVar(&key, "api-key", "", "the peer's API key, sent to it only (\"-\": read from the standard input; default: $"+string(envconfig.PeerAPIKey)+")")
	case "list", "ls":
		f.fs.BoolVar(&asJSON, "json", false, "print the peers as JSON, as GET /api/peers gives them")
	case "discover":
		f.fs.BoolVar(&asJSON, "json", false, "print them as JSON, as GET /api/peers/discovered gives them")
	case "rm", "remove":
	default:
		return usageError{fmt.Errorf("unknown peer command %q (add, list, rm or discover)", sub)}
	}
	pos, err := f.parse(args)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	switch sub {
	case "add":
		if len(pos) != 1 {
			return usageError{errors.New("usage: llamatray peer add URL [--name NAME] [--api-key KEY|-]")}
		}
		set := false
		f.fs.Visit(func(fl *flag.Flag) { set = set || fl.Name == "api-key" })
		key, err := peerKey(key, set, env)
		if err != nil {
			return err
		}
		return peerAdd(ctx, f, env, wire.PeerAdd{Name: name, URL: pos[0], APIKey: key})
	case "rm", "remove":
		if len(pos) != 1 {
			return usageError{errors.New("usage: llamatray peer rm NAME")}
		}
		return peerRemove(ctx, f, env, pos[0])
	case "discover":
		if len(pos) != 0 {
			return usageError{errors.New("usage: llamatray peer discover [--json]")}
		}
		return peerDiscover(ctx, f, env, asJSON)
	default:
		if len(pos) != 0 {
			return usageError{errors.New("usage: llamatray peer list [--json]")}
		}
		return peerList(ctx, f, env, asJSON)
	}
}

// peerKey is the key `peer add` sends: --api-key's, from the standard input's first line for
// "-", else $LLAMATRAY_PEER_API_KEY's (a flag's value is readable by any user in the process list).
func peerKey(flagKey string, set bool, env Env) (string, error) {
	switch {
	case set && flagKey == "-":
		if env.Stdin == nil {
			return "", usageError{errors.New("--api-key -: there is no standard input to read the key from")}
		}
		line, err := bufio.NewReader(io.LimitReader(env.Stdin, 64<<10)).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return "", fmt.Errorf("--api-key -: reading the key from the standard input: %w", err)
		}
		key := strings.TrimSpace(line)
		if key == "" {
			return "", usageError{errors.New("--api-key -: the standard input held no key (give it on its first line)")}
		}
		return key, nil
	case set:
		return flagKey, nil
	}
	return envconfig.PeerAPIKey.From(env.Getenv), nil
}

func peerAdd(ctx context.Context, f *clientFlags, env Env, p wire.PeerAdd) error {
	var err error
	if p.Name, p.URL, err = config.PeerOf(p.Name, strings.TrimSpace(p.URL)); err != nil {
		return usageError{err}
	}
	c, via, err := f.running(ctx)
	if err != nil {
		return err
	}
	if c != nil {
		peers, err := c.AddPeer(ctx, p)
		if err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "peer %s added%s: %s\n", p.Name, via, p.URL)
		for _, wp := range peers {
			if wp.Name == p.Name {
				if wp.Error != "" {
					wp.State += " (" + wp.Error + ")"
				}
				fmt.Fprintf(env.Stdout, "state: %s\n", wp.State)
			}
		}
		return nil
	}
	path, err := editConfigFile(f, func(cfg *config.Config) error {
		cfg.SetPeer(p.Name, config.Peer{URL: p.URL, APIKey: p.APIKey})
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "peer %s added to %s: %s (read when Llamatray starts)\n", p.Name, path, p.URL)
	return nil
}

func peerRemove(ctx context.Context, f *clientFlags, env Env, name string) error {
	c, via, err := f.running(ctx)
	if err != nil {
		return err
	}
	if c != nil {
		if err := c.RemovePeer(ctx, name); err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "peer %s removed%s\n", name, via)
		return nil
	}
	path, err := editConfigFile(f, func(cfg *config.Config) error {
		if !cfg.RemovePeer(name) {
			return fmt.Errorf("no peer is named %q", name)
		}
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "peer %s removed from %s\n", name, path)
	return nil
}

func peerList(ctx context.Context, f *clientFlags, env Env, asJSON bool) error {
	c, _, err := f.running(ctx)
	if err != nil {
		return err
	}
	var peers []wire.Peer
	if c != nil {
		if peers, err = c.Peers(ctx); err != nil {
			return err
		}
	} else {
		cfg := fileConfig(f.configPath)
		for _, name := range slices.Sorted(maps.Keys(cfg.Peers)) {
			sp := cfg.Peers[name]
			peers = append(peers, wire.Peer{Name: name, URL: sp.URL, State: "not running", HasKey: sp.APIKey != "", Models: []wire.PeerModel{}})
		}
	}
	if asJSON {
		if peers == nil {
			peers = []wire.Peer{}
		}
		return printJSON(env.Stdout, peers)
	}
	if len(peers) == 0 {
		fmt.Fprintln(env.Stderr, "no peers (add one with: llamatray peer add URL)")
		return nil
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tURL\tSTATE\tMODELS\tERROR")
	for _, p := range peers {
		ids := make([]string, 0, len(p.Models))
		for _, m := range p.Models {
			ids = append(ids, m.ID)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p.Name, p.URL, p.State, orDash(strings.Join(ids, ", ")), orDash(p.Error))
	}
	return tw.Flush()
}

// editConfigFile changes the configuration file the flags name (the default one otherwise), when
// no instance runs: through the configuration's one writer (config.Writer), under the lock a
// running service takes too.
func editConfigFile(f *clientFlags, change func(*config.Config) error) (string, error) {
	path, err := configPath(f.configPath)
	if err != nil {
		return "", err
	}
	w := &config.Writer{Path: path}
	load := func() (config.Config, error) { return config.Load(path) }
	return path, w.Edit(load, change, func(_, cfg config.Config) error { return cfg.Save(path) })
}
