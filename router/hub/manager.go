package hub

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/llamatray/llamatray/router/atomicfile"
)

// Pull states.
const (
	StateDownloading = "downloading"
	StateDownloaded  = "downloaded" // verified and listed by the catalog
	StateFailed      = "failed"
	StateCancelled   = "cancelled"
	StatePaused      = "paused" // stopped with its partial files kept; the next pull resumes it
)

// PullStatus is a snapshot of one pull.
type PullStatus struct {
	Model    string // ORG/REPO:QUANT
	State    string
	Progress Progress
	Error    string
	Paths    []string // snapshot paths, once downloaded
	Started  time.Time
}

// Event is one change of a pull, for /models/events.
type Event struct {
	Time time.Time
	PullStatus
}

// Manager runs pulls in the background, one per ORG/REPO:QUANT, and tells subscribers how they
// go. Its methods are safe for concurrent use.
type Manager struct {
	cache Cache
	// listed is called after a download verified; it rescans the catalog and says whether the
	// model is now listed under its name. nil: always listed.
	listed func(name string, paths []string) error
	log    *slog.Logger

	mu     sync.Mutex // guards client, pulls, subs, file and saves
	client *Client    // replaced whole, never changed in place (SetToken)
	pulls  map[string]*pull
	// The state file of unfinished pulls (Remember): its path, the writer's wake-ups (nil
	// without Remember, and after Close) and its end.
	file      string
	saves     chan struct{}
	saverDone chan struct{}
	subs      map[chan Event]struct{}
}

type pull struct {
	st     PullStatus
	cancel context.CancelCauseFunc // nil cause: cancel; ErrPaused: pause
	done   chan struct{}           // closed when the pull ended
	blobs  []string                // the sha256 of each of its files: what a Discard removes
}

// NewManager returns a manager downloading with c into cache. listed may be nil.
func NewManager(c *Client, cache Cache, listed func(name string, paths []string) error, log *slog.Logger) *Manager {
	log = cmp.Or(log, slog.Default())
	return &Manager{client: c, cache: cache, listed: listed, log: log, pulls: map[string]*pull{}, subs: map[chan Event]struct{}{}}
}

// Client returns the Hub client.
func (m *Manager) Client() *Client {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.client
}

// SetToken makes token ("" = none) the Hub token of the pulls and requests that start from now on.
func (m *Manager) SetToken(token string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.client = m.client.withToken(token)
}

// withToken is a copy of c with token.
func (c *Client) withToken(token string) *Client {
	own := *c
	own.Token = token
	return &own
}

// Cache returns the cache pulls go to.
func (m *Manager) Cache() Cache { return m.cache }

func key(name string) string { return strings.ToLower(name) }

// Start looks the model up on the Hub, checks the disk space and starts the download in the
// background. It returns the pull's status; a pull of the same model already running is returned
// as is. Errors (no such repo or quant, a gated repo, no disk space) come before anything is written.
func (m *Manager) Start(ctx context.Context, ref Ref) (PullStatus, error) {
	return m.StartWithToken(ctx, ref, "")
}

// StartWithToken is Start with a Hub token for this pull only (the one `llamatray pull` has in
// its shell, passed to the running instance); "" uses the manager's own.
func (m *Manager) StartWithToken(ctx context.Context, ref Ref, token string) (PullStatus, error) {
	if st, ok := m.Status(ref.String()); ok && st.State == StateDownloading {
		return st, nil
	}
	c := m.Client()
	if token != "" {
		c = c.withToken(token)
	}
	l, err := c.Files(ctx, ref.Repo)
	if err != nil {
		return PullStatus{}, err
	}
	q, err := l.Pick(ref.Quant)
	if err != nil {
		return PullStatus{}, err
	}
	if err := CheckSpace(m.cache, l, q); err != nil {
		return PullStatus{}, err
	}
	if err := c.CheckAccess(ctx, l, q); err != nil {
		return PullStatus{}, err
	}
	name := Ref{Repo: l.Repo, Quant: q.Name}.String()
	m.mu.Lock()
	if p, ok := m.pulls[key(name)]; ok && p.st.State == StateDownloading {
		st := p.st
		m.mu.Unlock()
		return st, nil
	}
	pctx, cancel := context.WithCancelCause(context.Background())
	p := &pull{cancel: cancel, done: make(chan struct{}),
		st: PullStatus{Model: name, State: StateDownloading, Started: time.Now(), Progress: progressOf(q.All())}}
	for _, f := range q.All() {
		p.blobs = append(p.blobs, f.SHA256)
	}
	m.pulls[key(name)] = p
	st := p.st
	m.mu.Unlock()
	m.publish(st)
	m.kick()
	m.log.Info("pull started", "model", name, "bytes", q.Size)
	go m.run(pctx, c, p, l, q)
	return st, nil
}

func (m *Manager) run(ctx context.Context, c *Client, p *pull, l *Listing, q Quant) {
	defer close(p.done)
	defer p.cancel(nil)
	var accept func([]string) error // a model the catalog does not list is undone like a bad checksum
	if m.listed != nil {
		name := p.st.Model // set before run started, never changed
		accept = func(paths []string) error { return m.listed(name, paths) }
	}
	paths, err := c.DownloadThen(ctx, m.cache, l, q, func(pr Progress) {
		m.mu.Lock()
		p.st.Progress = pr
		st := p.st
		m.mu.Unlock()
		m.publish(st)
	}, accept)
	m.mu.Lock()
	switch {
	case err == nil:
		p.st.State, p.st.Paths = StateDownloaded, paths
	case errors.Is(err, ErrCancelled):
		p.st.State, p.st.Error = StateCancelled, err.Error()
	case errors.Is(err, ErrPaused):
		p.st.State, p.st.Error = StatePaused, err.Error()
	default:
		p.st.State, p.st.Error = StateFailed, err.Error()
	}
	st := p.st
	m.mu.Unlock()
	if err != nil {
		m.log.Warn("pull ended", "model", st.Model, "state", st.State, "err", err)
	} else {
		m.log.Info("pull done", "model", st.Model, "bytes", st.Progress.Total, "took", time.Since(st.Started).Round(time.Millisecond))
	}
	m.publish(st)
	m.kick()
}

// Cancel stops a running pull; it removes what the pull wrote before Wait returns.
func (m *Manager) Cancel(name string) bool { return m.stop(name, nil) }

// Pause stops a running pull and keeps its partial files: Start of the same model resumes it.
func (m *Manager) Pause(name string) bool { return m.stop(name, ErrPaused) }

func (m *Manager) stop(name string, cause error) bool {
	p, ok := m.get(name)
	if !ok {
		return false
	}
	p.cancel(cause)
	return true
}

// Wait blocks until the named pull ended (or ctx did) and returns its last status.
func (m *Manager) Wait(ctx context.Context, name string) (PullStatus, error) {
	p, ok := m.get(name)
	if !ok {
		return PullStatus{}, fmt.Errorf("no pull of %s", name)
	}
	select {
	case <-p.done:
	case <-ctx.Done():
		return PullStatus{}, ctx.Err()
	}
	st, _ := m.Status(name)
	return st, nil
}

func (m *Manager) get(name string) (*pull, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.pulls[key(name)]
	return p, ok
}

// Status returns the named pull's status (the last one, for a pull that ended).
func (m *Manager) Status(name string) (PullStatus, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.pulls[key(name)]
	if !ok {
		return PullStatus{}, false
	}
	return clonePull(p.st), true
}

// List returns every pull this manager ran or runs, newest first.
func (m *Manager) List() []PullStatus {
	m.mu.Lock()
	out := make([]PullStatus, 0, len(m.pulls))
	for _, p := range m.pulls {
		out = append(out, clonePull(p.st))
	}
	m.mu.Unlock()
	slices.SortFunc(out, func(a, b PullStatus) int { return b.Started.Compare(a.Started) })
	return out
}

func clonePull(st PullStatus) PullStatus {
	st.Progress.Files = slices.Clone(st.Progress.Files)
	st.Paths = slices.Clone(st.Paths)
	return st
}

// Subscribe returns a channel of pull events and a function that ends the subscription. Progress
// events are dropped for a subscriber that is behind; the final event of a pull is dropped only
// when 64 events wait unread.
func (m *Manager) Subscribe() (<-chan Event, func()) {
	ch := make(chan Event, 64)
	m.mu.Lock()
	m.subs[ch] = struct{}{}
	m.mu.Unlock()
	return ch, func() {
		m.mu.Lock()
		delete(m.subs, ch)
		m.mu.Unlock()
	}
}

func (m *Manager) publish(st PullStatus) {
	ev := Event{Time: time.Now(), PullStatus: clonePull(st)}
	m.mu.Lock()
	defer m.mu.Unlock()
	for ch := range m.subs {
		if st.State == StateDownloading && len(ch) > cap(ch)/2 {
			continue // behind: skip progress, keep room for state changes
		}
		select {
		case ch <- ev:
		default:
		}
	}
}

// blobLocks serializes downloads of one blob within this process (two quants may share a
// projector); lockBlob adds the lock file other programs use.
var (
	blobMu    sync.Mutex // guards blobLocks
	blobLocks = map[string]*sync.Mutex{}
)

// lockBlob holds a blob for one download: in this process, and against other processes through
// <cache>/.locks/models--ORG--REPO/<sha256>.lock, the lock file the Hub's clients take. It waits
// for another holder until ctx ends. root is the cache folder.
func lockBlob(ctx context.Context, root *os.Root, repo, sha string) (func(), error) {
	rel := lockRel(repo, sha)
	path := filepath.Join(root.Name(), rel)
	blobMu.Lock()
	m := blobLocks[path]
	if m == nil {
		m = &sync.Mutex{}
		blobLocks[path] = m
	}
	blobMu.Unlock()
	m.Lock()
	if err := root.MkdirAll(filepath.Dir(rel), 0o755); err != nil {
		m.Unlock()
		return nil, err
	}
	f, err := root.OpenFile(rel, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		m.Unlock()
		return nil, err
	}
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		err := atomicfile.TryLock(f)
		if err == nil {
			break
		}
		if !errors.Is(err, atomicfile.ErrBusy) {
			f.Close()
			m.Unlock()
			return nil, fmt.Errorf("locking %s: %w", path, err)
		}
		select { // another program downloads this blob: wait for its lock
		case <-ctx.Done():
			f.Close()
			m.Unlock()
			return nil, ctx.Err()
		case <-tick.C:
		}
	}
	return func() {
		f.Close() // releases the lock
		m.Unlock()
	}, nil
}

// lockRel is a blob's lock file, relative to the cache folder.
func lockRel(repo, sha string) string { return filepath.Join(".locks", repoRel(repo), sha+".lock") }
