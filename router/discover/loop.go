package discover

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/llamatray/llamatray/router/internal/backoff"
	"github.com/llamatray/llamatray/router/wire"
)

// Settings are what the configuration in force says, read before every look.
type Settings struct {
	Browse    bool     // look for other instances (discover)
	Advertise bool     // announce this one (advertise), while Listen is not loopback
	Listen    string   // the router's bound address, host:port; "" while it is not listening
	PeerURLs  []string // the configured peers' URLs: those are not offered again
}

// Options configure a Discoverer.
type Options struct {
	Self     Self
	Settings func() Settings
	Every    time.Duration // between looks; 0: 1 minute
	Wait     time.Duration // how long a look listens for answers; 0: 2 seconds
	MaxWait  time.Duration // the longest wait after failed looks (doubling from Every); 0: 10 minutes
	Log      *slog.Logger
}

// Discoverer looks for other instances in the background (Run, one goroutine) and announces this
// one; Found is what it saw.
type Discoverer struct {
	o    Options
	poke chan struct{}
	// lookup and now are Lookup and time.Now; tests replace them before Run
	lookup func(ctx context.Context, wait time.Duration) ([]Found, error)
	now    func() time.Time

	mu       sync.Mutex       // guards seen, lastErr, lastLook and changed
	seen     map[string]Found // by URL: the last answers, LastSeen set
	lastErr  error
	lastLook time.Time     // when the last look began
	changed  chan struct{} // closed at the next change of Found
}

// New is a Discoverer; nothing happens until Run.
func New(o Options) *Discoverer {
	if o.Every <= 0 {
		o.Every = time.Minute
	}
	if o.Wait <= 0 {
		o.Wait = 2 * time.Second
	}
	if o.MaxWait <= 0 {
		o.MaxWait = 10 * time.Minute
	}
	o.Log = cmp.Or(o.Log, slog.Default())
	return &Discoverer{o: o, poke: make(chan struct{}, 1), lookup: Lookup, now: time.Now,
		seen: map[string]Found{}, changed: make(chan struct{})}
}

// Settings are the settings in force now, as the next look reads them.
func (d *Discoverer) Settings() Settings { return d.o.Settings() }

// Poke makes Run read the settings and look again now (after a configuration change).
func (d *Discoverer) Poke() {
	select {
	case d.poke <- struct{}{}:
	default:
	}
}

// RefreshGap is the least time between two looks Refresh asks for.
const RefreshGap = 5 * time.Second

// Refresh asks for a look now unless one began less than gap ago (at least RefreshGap): someone is
// looking at the list (the API, the window), so it should not be a minute old. A look answers only
// later.
func (d *Discoverer) Refresh(gap time.Duration) {
	d.mu.Lock()
	stale := d.now().Sub(d.lastLook) >= max(gap, RefreshGap)
	d.mu.Unlock()
	if stale {
		d.Poke()
	}
}

// Changed is closed at the next change of what Found returns.
func (d *Discoverer) Changed() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.changed
}

// Found is what the last looks saw, without this instance and the configured peers, each with a
// peer name of its own; enabled is false while browsing is off; err is why the last look failed.
func (d *Discoverer) Found() (found []wire.Discovered, enabled bool, err error) {
	set := d.o.Settings()
	d.mu.Lock()
	all := slices.Collect(maps.Values(d.seen))
	enabled, err = set.Browse, d.lastErr
	d.mu.Unlock()
	return Named(Filter(all, d.o.Self.ID, set.PeerURLs)), enabled, err
}

// Named is found as the API gives it, each with a peer name of its own, made from its instance
// name ("-2", "-3" after a repeated one).
func Named(found []Found) []wire.Discovered {
	names := map[string]int{}
	out := []wire.Discovered{}
	for _, f := range found {
		f.Name = label(f.Instance)
		if names[f.Name]++; names[f.Name] > 1 {
			f.Name = fmt.Sprintf("%s-%d", f.Name, names[f.Name])
		}
		out = append(out, f.Discovered)
	}
	return out
}

// Run looks every Every (doubling after each failure, to MaxWait) and keeps the announcement in
// step with the settings, until ctx ends; then the announcement is withdrawn.
func (d *Discoverer) Run(ctx context.Context) {
	var adv *Advertiser
	var advAt string // the listen address adv announces
	defer func() { adv.Close() }()
	failures := 0
	for {
		set := d.o.Settings()
		want := ""
		if set.Advertise {
			if _, ok := Advertised(set.Listen); ok {
				want = set.Listen
			}
		}
		var advErr error
		if want != advAt || (want != "" && adv == nil) {
			adv.Close()
			adv, advAt = nil, ""
			if want != "" {
				if adv, advErr = Advertise(want, d.o.Self); advErr == nil {
					advAt = want
					d.o.Log.Info("announced on the local network (mDNS)", "service", ServiceType, "listen", want)
				} else {
					d.o.Log.Warn("cannot announce on the local network", "listen", want, "error", advErr)
				}
			}
		}
		var lookErr error
		if set.Browse {
			lookErr = d.look(ctx)
		} else {
			d.clear()
		}
		if ctx.Err() != nil {
			return
		}
		if err := errors.Join(advErr, lookErr); err != nil {
			failures++
		} else {
			failures = 0
		}
		// every, doubled for each failure in a row, at most MaxWait
		t := time.NewTimer(backoff.Doubling(d.o.Every, d.o.MaxWait, failures))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-d.poke:
			t.Stop()
		case <-t.C:
		}
	}
}

// look asks once and merges the answers; those not heard for three rounds are dropped.
func (d *Discoverer) look(ctx context.Context) error {
	lctx, cancel := context.WithTimeout(ctx, d.o.Wait+5*time.Second)
	defer cancel()
	d.mu.Lock()
	d.lastLook = d.now()
	d.mu.Unlock()
	found, err := d.lookup(lctx, d.o.Wait)
	now := d.now()
	if err != nil && ctx.Err() == nil {
		d.o.Log.Debug("mdns lookup failed", "error", err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.lastErr = err
	before := len(d.seen)
	changed := false
	for _, f := range found {
		if f.ID == d.o.Self.ID {
			continue
		}
		f.LastSeen = now
		if _, ok := d.seen[f.URL]; !ok && len(d.seen) >= maxFound {
			continue // a flood of announcements fills no more than maxFound
		}
		if old, ok := d.seen[f.URL]; !ok || old.ID != f.ID || old.Instance != f.Instance || old.Version != f.Version {
			changed = true
		}
		d.seen[f.URL] = f
	}
	for u, f := range d.seen {
		if now.Sub(f.LastSeen) > 3*d.o.Every+d.o.Wait {
			delete(d.seen, u)
		}
	}
	if changed || len(d.seen) != before {
		close(d.changed)
		d.changed = make(chan struct{})
	}
	return err
}

// clear forgets what was seen, browsing being off.
func (d *Discoverer) clear() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.lastErr = nil
	if len(d.seen) > 0 {
		d.seen = map[string]Found{}
		close(d.changed)
		d.changed = make(chan struct{})
	}
}
