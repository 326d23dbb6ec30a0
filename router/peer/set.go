package peer

import (
	"cmp"
	"context"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/llamatray/llamatray/router/internal/backoff"
)

// Spec is one configured peer ([peers.NAME]).
type Spec struct {
	Name   string
	URL    string
	APIKey string
}

// States of a peer.
const (
	StateChecking = "checking" // not answered yet
	StateUp       = "up"
	StateDown     = "down"
)

// Defaults of Options.
const (
	DefaultRefresh     = 30 * time.Second
	DefaultMinBackoff  = time.Second
	DefaultMaxBackoff  = 30 * time.Second
	DefaultPollTimeout = 4 * time.Second
	DefaultDialTimeout = 5 * time.Second
)

// Options configure a Set; zero fields take the defaults.
type Options struct {
	Refresh     time.Duration // between reads of an answering peer's list
	MinBackoff  time.Duration // first wait after a failed read; doubled after each, up to MaxBackoff
	MaxBackoff  time.Duration
	PollTimeout time.Duration // bounds one read of the list
	DialTimeout time.Duration // bounds a connection to a peer, for reads and requests alike
	Logger      *slog.Logger
}

// Info is what is known of one peer now.
type Info struct {
	Spec
	State    string
	Kind     string // what answered the list: "openai" (/v1/models) or "ollama" (/api/tags)
	Models   []Model
	Error    string    // why the last read failed; "" when it did not
	LastSeen time.Time // the last read that succeeded; zero when none did
	NextTry  time.Time // when the next read is due
}

// Up says the peer answered its last read.
func (i Info) Up() bool { return i.State == StateUp }

// Set is every configured peer, each read by a goroutine of its own.
type Set struct {
	o         Options
	transport *http.Transport
	client    *http.Client

	mu      sync.Mutex         // guards peers, changed and closed; never held across I/O
	peers   map[string]*poller // by name
	changed chan struct{}      // closed and replaced whenever any peer's Info changes
	closed  bool
}

// poller is one peer's goroutine and what it last found. info and failed are guarded by Set.mu.
type poller struct {
	spec   Spec
	cancel context.CancelFunc
	done   chan struct{} // closed when the goroutine has returned
	poke   chan struct{} // a read now, rather than at the next due time (capacity 1)
	info   Info
	failed chan struct{} // closed and replaced at every failed read
}

// New builds an empty Set; Sync gives it its peers.
func New(o Options) *Set {
	orDefault := func(d *time.Duration, def time.Duration) {
		if *d <= 0 {
			*d = def
		}
	}
	orDefault(&o.Refresh, DefaultRefresh)
	orDefault(&o.MinBackoff, DefaultMinBackoff)
	orDefault(&o.PollTimeout, DefaultPollTimeout)
	orDefault(&o.DialTimeout, DefaultDialTimeout)
	if o.MaxBackoff < o.MinBackoff {
		o.MaxBackoff = max(DefaultMaxBackoff, o.MinBackoff)
	}
	o.Logger = cmp.Or(o.Logger, slog.New(slog.DiscardHandler))
	tr := &http.Transport{
		Proxy:                 nil, // peers are reached directly, as the configuration names them
		DialContext:           (&net.Dialer{Timeout: o.DialTimeout, KeepAlive: 15 * time.Second}).DialContext,
		TLSHandshakeTimeout:   o.DialTimeout,
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       30 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	// A redirect is not followed: Go keeps the Authorization header on a redirect to the same host
	// at another port or scheme, and the peer's key is for the peer alone. The 3xx is the answer.
	client := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return &Set{o: o, transport: tr, client: client, peers: map[string]*poller{}, changed: make(chan struct{})}
}

// Transport is the connection pool requests to peers go through (dials bounded by DialTimeout).
func (s *Set) Transport() http.RoundTripper { return s.transport }

// Sync makes the peers those of specs: a new or changed peer gets a fresh goroutine, a removed one
// is stopped. It returns once the stopped goroutines have returned.
func (s *Set) Sync(specs []Spec) {
	want := make(map[string]Spec, len(specs))
	for _, sp := range specs {
		want[sp.Name] = sp
	}
	var stop []*poller
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	for name, p := range s.peers {
		if sp, ok := want[name]; !ok || sp != p.spec {
			stop = append(stop, p)
			delete(s.peers, name)
		}
	}
	for name, sp := range want {
		if _, ok := s.peers[name]; ok {
			continue
		}
		ctx, cancel := context.WithCancel(context.Background())
		p := &poller{spec: sp, cancel: cancel, done: make(chan struct{}), poke: make(chan struct{}, 1),
			info: Info{Spec: sp, State: StateChecking}, failed: make(chan struct{})}
		s.peers[name] = p
		go s.run(ctx, p)
	}
	s.notifyLocked()
	s.mu.Unlock()
	stopAll(stop)
}

// Close stops every peer's goroutine and drops idle connections.
func (s *Set) Close() {
	s.mu.Lock()
	s.closed = true
	ps := slices.Collect(maps.Values(s.peers))
	clear(s.peers)
	s.notifyLocked()
	s.mu.Unlock()
	stopAll(ps)
	s.transport.CloseIdleConnections()
}

// stopAll stops each poller's goroutine and waits for it to return.
func stopAll(ps []*poller) {
	for _, p := range ps {
		p.cancel()
		<-p.done
	}
}

// notifyLocked wakes every Changed waiter. The caller holds mu.
func (s *Set) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// Changed is closed at the next change of any peer's Info.
func (s *Set) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

// Peers is every peer's Info, by name; Models are copies.
func (s *Set) Peers() []Info {
	s.mu.Lock()
	out := make([]Info, 0, len(s.peers))
	for _, p := range s.peers {
		out = append(out, p.snapshot())
	}
	s.mu.Unlock()
	sort.Slice(out, func(a, b int) bool { return out[a].Name < out[b].Name })
	return out
}

// Peer is one peer's Info.
func (s *Set) Peer(name string) (Info, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.peers[name]
	if !ok {
		return Info{}, false
	}
	return p.snapshot(), true
}

// snapshot is p's Info with a copy of its models. The caller holds Set.mu.
func (p *poller) snapshot() Info {
	i := p.info
	i.Models = slices.Clone(i.Models)
	return i
}

// Find is the peer that lists model id: of those that do, the first by name that is up, else the
// first by name. ok is false when no peer lists it. It copies no model list but the one it returns.
func (s *Set) Find(id string) (Info, bool) {
	s.mu.Lock()
	var best *poller
	for _, p := range s.peers {
		if !slices.ContainsFunc(p.info.Models, func(m Model) bool { return m.ID == id }) {
			continue
		}
		if best == nil || better(p.info, best.info) {
			best = p
		}
	}
	var i Info
	if best != nil {
		i = best.snapshot()
	}
	s.mu.Unlock()
	return i, best != nil
}

// better says a is picked over b for a model both list: up before down, then by name.
func better(a, b Info) bool {
	if a.Up() != b.Up() {
		return a.Up()
	}
	return a.Name < b.Name
}

// Poke asks peer name's goroutine to read its list now (a request to it failed, or succeeded
// while it was thought down).
func (s *Set) Poke(name string) {
	s.mu.Lock()
	p, ok := s.peers[name]
	s.mu.Unlock()
	if !ok {
		return
	}
	select {
	case p.poke <- struct{}{}:
	default:
	}
}

// Failed is closed at peer name's next failed read; nil (never ready) for a peer not configured.
func (s *Set) Failed(name string) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p, ok := s.peers[name]; ok {
		return p.failed
	}
	return nil
}

// run reads p's list until ctx ends: every Refresh while it answers, after backoff while not.
func (s *Set) run(ctx context.Context, p *poller) {
	defer close(p.done)
	log := s.o.Logger.With("peer", p.spec.Name, "url", p.spec.URL)
	var retry time.Duration // 0 while the peer answers
	for {
		rctx, cancel := context.WithTimeout(ctx, s.o.PollTimeout)
		models, kind, err := fetchModels(rctx, s.client, p.spec)
		cancel()
		if ctx.Err() != nil {
			return
		}
		wait := s.o.Refresh
		if err != nil {
			retry = backoff.Next(retry, s.o.MinBackoff, s.o.MaxBackoff)
			wait = retry
		} else {
			retry = 0
		}
		switch was := s.record(p, models, kind, err, time.Now(), wait); {
		case err == nil && was != StateUp:
			log.Info("peer up", "models", len(models))
		case err != nil && was != StateDown:
			log.Warn("peer down", "err", err, "retry_in", wait)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		case <-p.poke:
			t.Stop()
		}
	}
}

// record puts one read's outcome in p.info and wakes the waiters; was is the state before.
func (s *Set) record(p *poller, models []Model, kind string, err error, now time.Time, wait time.Duration) (was string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.peers[p.spec.Name] != p {
		return "" // replaced or removed meanwhile
	}
	was = p.info.State
	p.info.NextTry = now.Add(wait)
	if err == nil {
		p.info.State, p.info.Kind, p.info.Models, p.info.Error, p.info.LastSeen = StateUp, kind, models, "", now
	} else {
		p.info.State, p.info.Error = StateDown, err.Error()
		close(p.failed)
		p.failed = make(chan struct{})
	}
	s.notifyLocked()
	return was
}
