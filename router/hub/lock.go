package hub

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/llamatray/llamatray/router/atomicfile"
)

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
