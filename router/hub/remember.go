package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/llamatray/llamatray/router/atomicfile"
	"github.com/llamatray/llamatray/router/config"
)

// record is one pull that did not finish, as the state file keeps it.
type record struct {
	Model   string    `json:"model"` // ORG/REPO:QUANT
	State   string    `json:"state"`
	Total   int64     `json:"total"`
	Started time.Time `json:"started"`
	Error   string    `json:"error,omitempty"`
	Blobs   []string  `json:"blobs,omitempty"` // the sha256 of its files
}

// maxRecords bounds the pulls the state file keeps (and reads back).
const maxRecords = 100

// Remember keeps the pulls that have not finished (running, paused, failed with their partial
// files kept) in the JSON file at path, and offers those an earlier run left as paused pulls, with
// what their partial files hold: Start resumes them. Call it once, before the first Start; Close
// writes the file a last time. A state file that cannot be read is set aside (path+".bad") and the
// manager starts without it.
func (m *Manager) Remember(path string) error {
	recs, rerr := readRecords(path)
	if rerr != nil {
		_ = os.Rename(path, path+".bad")
	}
	m.mu.Lock()
	for _, r := range recs {
		ref, err := ParseRef(r.Model)
		if err != nil || ref.Quant == "" {
			continue
		}
		if _, running := m.pulls[key(r.Model)]; running {
			continue
		}
		have := m.cache.partialBytes(ref.Repo)
		if have == 0 {
			continue // nothing on disk to resume
		}
		why := r.Error
		if r.State == StateDownloading || why == "" {
			why = "stopped when Llamatray last quit; resume to go on from " + config.HumanSize(have)
		}
		done := make(chan struct{})
		close(done)
		blobs := slices.DeleteFunc(r.Blobs, func(s string) bool { return !validSHA(s) })
		m.pulls[key(r.Model)] = &pull{cancel: func(error) {}, done: done, blobs: blobs, st: PullStatus{
			Model: r.Model, State: StatePaused, Error: why, Started: r.Started,
			Progress: Progress{Done: have, Total: r.Total},
		}}
	}
	m.file = path
	saves, done := make(chan struct{}, 1), make(chan struct{})
	m.saves, m.saverDone = saves, done
	m.mu.Unlock()
	go m.saver(saves, done)
	m.kick()
	if rerr != nil {
		return fmt.Errorf("the list of unfinished downloads %s was unreadable and is set aside: %w", path, rerr)
	}
	return nil
}

// Close ends the state file's writer after a last write; it does nothing without Remember.
func (m *Manager) Close() {
	m.mu.Lock()
	saves, done := m.saves, m.saverDone
	m.saves = nil
	m.mu.Unlock()
	if saves != nil {
		close(saves)
		<-done
	}
}

// kick asks the writer to save the records.
func (m *Manager) kick() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.saves != nil {
		select {
		case m.saves <- struct{}{}:
		default: // a save is due already; it will read the latest state
		}
	}
}

// saver owns the state file: it writes the records when kicked, and once more at Close.
func (m *Manager) saver(saves <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	for range saves {
		m.save()
	}
	m.save()
}

func (m *Manager) save() {
	m.mu.Lock()
	path := m.file
	var recs []record
	for _, p := range m.pulls {
		switch p.st.State {
		case StateDownloading, StatePaused, StateFailed:
			recs = append(recs, record{Model: p.st.Model, State: p.st.State, Total: p.st.Progress.Total, Started: p.st.Started, Error: p.st.Error, Blobs: p.blobs})
		}
	}
	m.mu.Unlock()
	if len(recs) > maxRecords {
		recs = recs[:maxRecords]
	}
	if err := writeRecords(path, recs); err != nil {
		m.log.Warn("cannot keep the list of unfinished downloads", "path", path, "err", err)
	}
}

func readRecords(path string) ([]record, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var recs []record
	if err := json.NewDecoder(capReader(f, 1<<20, path)).Decode(&recs); err != nil {
		return nil, err
	}
	if len(recs) > maxRecords {
		recs = recs[:maxRecords]
	}
	return recs, nil
}

func writeRecords(path string, recs []record) error {
	if recs == nil {
		recs = []record{}
	}
	b, err := json.MarshalIndent(recs, "", "  ")
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return atomicfile.Write(path, append(b, '\n'), 0o600)
}

// Discard forgets a pull that is not running (paused, failed, cancelled) and deletes the partial
// files it left, so nothing of it stays; a running pull is cancelled instead, which removes what
// it wrote. It reports whether there was such a pull.
func (m *Manager) Discard(name string) (bool, error) {
	m.mu.Lock()
	p, ok := m.pulls[key(name)]
	if ok && p.st.State != StateDownloading {
		delete(m.pulls, key(name))
	}
	m.mu.Unlock()
	if !ok {
		return false, nil
	}
	if p.st.State == StateDownloading {
		m.Cancel(name)
		_, err := m.Wait(context.Background(), name)
		m.mu.Lock()
		delete(m.pulls, key(name))
		m.mu.Unlock()
		m.kick()
		return true, err
	}
	defer m.kick()
	ref, err := ParseRef(p.st.Model)
	if err != nil {
		return true, err
	}
	root, err := m.cache.open()
	if err != nil {
		return true, nil // no cache: nothing left
	}
	defer root.Close()
	for _, sha := range p.blobs {
		if err := root.Remove(blobRel(ref.Repo, sha) + ".incomplete"); err != nil && !errors.Is(err, os.ErrNotExist) {
			return true, fmt.Errorf("%s: removing its partial file: %w", p.st.Model, err)
		}
	}
	return true, nil
}

// partialBytes is what the partial files of repo's blobs hold, 0 when none.
func (c Cache) partialBytes(repo string) int64 {
	found, _ := filepath.Glob(filepath.Join(c.RepoDir(repo), "blobs", "*.incomplete"))
	var n int64
	for _, p := range found {
		if st, err := os.Lstat(p); err == nil && st.Mode().IsRegular() && strings.HasSuffix(p, ".incomplete") {
			n += st.Size()
		}
	}
	return n
}
