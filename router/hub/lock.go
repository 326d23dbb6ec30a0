package hub

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

var errBusy = errors.New("locked by another process")

// blobLocks serializes downloads of one blob within this process (two quants may share a
// projector); lockBlob adds the lock file other programs use.
var (
	blobMu    sync.Mutex // guards blobLocks
	blobLocks = map[string]*sync.Mutex{}
)

// lockBlob holds a blob for one download: in this process, and against other processes through
// <cache>/.locks/models--ORG--REPO/<sha256>.lock, the lock file the Hub's clients take. It waits
// for another holder until ctx ends.
func (c Cache) lockBlob(ctx context.Context, repo, sha string) (func(), error) {
	path := c.lockPath(repo, sha)
	blobMu.Lock()
	m := blobLocks[path]
	if m == nil {
		m = &sync.Mutex{}
		blobLocks[path] = m
	}
	blobMu.Unlock()
	m.Lock()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		m.Unlock()
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		m.Unlock()
		return nil, err
	}
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		err := tryLock(f)
		if err == nil {
			break
		}
		if !errors.Is(err, errBusy) {
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

func (c Cache) lockPath(repo, sha string) string {
	return filepath.Join(c.Dir, ".locks", "models--"+strings.ReplaceAll(repo, "/", "--"), sha+".lock")
}
