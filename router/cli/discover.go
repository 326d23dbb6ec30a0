package cli

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/llamatray/llamatray/router/discover"
	"github.com/llamatray/llamatray/router/wire"
)

// lookWait is how long `peer discover` listens for answers when no instance runs.
const lookWait = 3 * time.Second

// peerDiscover is `llamatray peer discover`: the other Llamatrays on the local network that are not
// peers yet, as the running instance found them, else from a look of its own. Nothing is added.
func peerDiscover(ctx context.Context, f *clientFlags, env Env, asJSON bool) error {
	c, _, err := f.running(ctx)
	if err != nil {
		return err
	}
	var l wire.DiscoveredList
	if c != nil {
		if l, err = c.Discovered(ctx); err != nil {
			return err
		}
	} else {
		var urls []string
		for _, p := range fileConfig(f.configPath).Peers {
			urls = append(urls, p.URL)
		}
		found, err := discover.Lookup(ctx, lookWait)
		if err != nil {
			return fmt.Errorf("looking for other Llamatrays on the local network: %w", err)
		}
		l = wire.DiscoveredList{Enabled: true, Discovered: discover.Named(discover.Filter(found, "", urls))}
	}
	if l.Discovered == nil {
		l.Discovered = []wire.Discovered{}
	}
	if asJSON {
		return printJSON(env.Stdout, l)
	}
	switch {
	case !l.Enabled:
		fmt.Fprintln(env.Stderr, "discovery is off (discover = false in the configuration)")
		return nil
	case l.Error != "" && len(l.Discovered) == 0:
		return fmt.Errorf("looking for other Llamatrays on the local network: %s", l.Error)
	case len(l.Discovered) == 0:
		fmt.Fprintln(env.Stderr, "no other Llamatray found on this network (it must listen beyond 127.0.0.1, with advertise on)")
		return nil
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tINSTANCE\tURL\tVERSION")
	for _, d := range l.Discovered {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", d.Name, d.Instance, d.URL, orDash(d.Version))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(env.Stderr, "add one with: llamatray peer add URL --name NAME --api-key - (its key, from its owner, on the standard input)")
	return nil
}
