package hub

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/llamatray/llamatray/router/catalog"
	"github.com/llamatray/llamatray/router/config"
)

// CacheDir is the Hub's cache folder, as the Hub's clients and llama.cpp find it: HF_HUB_CACHE,
// else $HF_HOME/hub, else ~/.cache/huggingface/hub (config.HubCacheDir). getenv nil means os.Getenv.
func CacheDir(getenv func(string) string) string { return config.HubCacheDir(getenv) }

// Cache is one Hub cache folder. Per repo it holds models--ORG--REPO/ with blobs/<sha256> (the
// content, named by its etag, which is the sha256 for LFS files), snapshots/<commit>/<path>
// (relative symlinks into blobs, or copies where links are not possible), refs/<revision> (the
// commit hash) and partial blobs as blobs/<sha256>.incomplete (the Hub docs' "Hub Local Cache").
type Cache struct{ Dir string }

// RepoDir is the folder of an ORG/REPO.
func (c Cache) RepoDir(repo string) string { return filepath.Join(c.Dir, repoRel(repo)) }

// repoRel is the folder of an ORG/REPO relative to the cache folder.
func repoRel(repo string) string { return "models--" + strings.ReplaceAll(repo, "/", "--") }

func blobRel(repo, sha string) string { return filepath.Join(repoRel(repo), "blobs", sha) }

func snapshotRel(repo, commit, file string) string {
	return filepath.Join(repoRel(repo), "snapshots", commit, filepath.FromSlash(file))
}

func refRel(repo, name string) string { return filepath.Join(repoRel(repo), "refs", name) }

// open returns the cache folder as an os.Root, creating the folder: every file written from what
// the Hub sends goes through it, so no name, link or hard link can lead out of the cache.
func (c Cache) open() (*os.Root, error) {
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("the Hub cache %s: %w", c.Dir, err)
	}
	root, err := os.OpenRoot(c.Dir)
	if err != nil {
		return nil, fmt.Errorf("the Hub cache %s: %w", c.Dir, err)
	}
	return root, nil
}

// link places the snapshot entry for file at the blob: a relative symlink, else a hard link,
// else a copy (Windows without developer mode). Paths are relative to root, the cache folder.
func link(root *os.Root, repo, commit, file, sha string) error {
	dst := snapshotRel(repo, commit, file)
	if err := root.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	blob := blobRel(repo, sha)
	rel, err := filepath.Rel(filepath.Dir(dst), blob)
	if err != nil {
		return err
	}
	if target, err := root.Readlink(dst); err == nil && target == rel {
		return nil
	}
	if err := root.Remove(dst); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := root.Symlink(rel, dst); err == nil {
		return nil
	}
	if err := root.Link(blob, dst); err == nil {
		return nil
	}
	return copyIn(root, blob, dst)
}

// setRef writes refs/<name> = commit.
func setRef(root *os.Root, repo, name, commit string) error {
	p := refRel(repo, name)
	if err := root.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	tmp := p + ".tmp"
	if err := root.WriteFile(tmp, []byte(commit), 0o644); err != nil {
		return err
	}
	return root.Rename(tmp, p)
}

// blobOf returns the blob a snapshot entry links to, relative to the cache folder, when the link
// is one the cache layout makes: a relative link to <repo>/blobs/<sha256 or git id>. Anything else
// (a link to a user's own file, an absolute link, a link into another repo) is no blob of the
// repo's, and removing the entry never touches its target.
func blobOf(repo, entry, target string) (string, bool) {
	if target == "" || filepath.IsAbs(target) || strings.HasPrefix(filepath.ToSlash(target), "/") {
		return "", false
	}
	b := filepath.Join(filepath.Dir(entry), target)
	if filepath.Dir(b) != filepath.Join(repoRel(repo), "blobs") || !validBlobName(filepath.Base(b)) {
		return "", false
	}
	return b, true
}

// Remove deletes the snapshot entries of files (repo paths) in every snapshot of repo, then each
// blob nothing else in the repo refers to, then the repo folder once no snapshot holds a file.
// It returns the paths removed. It removes only what the cache layout names: a snapshot entry that
// links anywhere but the repo's blobs folder loses the entry, never its target.
func (c Cache) Remove(repo string, files []string) ([]string, error) {
	if err := checkRepo(repo); err != nil {
		return nil, err
	}
	for _, f := range files {
		if err := checkRepoPath(f); err != nil {
			return nil, fmt.Errorf("%s: %w", repo, err)
		}
	}
	root, err := os.OpenRoot(c.Dir)
	if err != nil {
		return nil, fmt.Errorf("%s is not in the Hub cache %s: %w", repo, c.Dir, err)
	}
	defer root.Close()
	dir := repoRel(repo)
	snapsDir := filepath.Join(dir, "snapshots")
	snaps, err := fs.ReadDir(root.FS(), filepath.ToSlash(snapsDir))
	if err != nil {
		return nil, fmt.Errorf("%s is not in the Hub cache %s: %w", repo, c.Dir, err)
	}
	var removed []string
	blobs := map[string]bool{} // blobs the removed entries used
	for _, s := range snaps {
		snap := filepath.Join(snapsDir, s.Name())
		for _, f := range keepShared(root, snap, files) {
			p := filepath.Join(snap, filepath.FromSlash(f))
			if b, ok := linkedBlob(root, repo, p); ok {
				blobs[b] = true
			}
			if err := root.Remove(p); err == nil {
				removed = append(removed, filepath.Join(c.Dir, p))
			} else if !errors.Is(err, fs.ErrNotExist) {
				return removed, err
			}
		}
	}
	inUse, left := blobsInUse(root, repo, snapsDir)
	for b := range blobs {
		if inUse[b] {
			continue
		}
		if st, err := root.Lstat(b); err != nil || !st.Mode().IsRegular() {
			continue // not a file the cache wrote
		}
		if err := root.Remove(b); err == nil {
			removed = append(removed, filepath.Join(c.Dir, b))
			_ = root.Remove(lockRel(repo, filepath.Base(b)))
		}
	}
	if left == 0 {
		if err := root.RemoveAll(dir); err != nil {
			return removed, err
		}
		removed = append(removed, filepath.Join(c.Dir, dir))
		locks := filepath.Dir(lockRel(repo, "x"))
		_ = root.RemoveAll(locks)
		_ = root.Remove(filepath.Dir(locks)) // only when empty
	} else {
		pruneEmpty(root, snapsDir)
	}
	return removed, nil
}

// linkedBlob is the blob the snapshot entry p of repo links to, if it is a link into the repo's
// blobs.
func linkedBlob(root *os.Root, repo, p string) (string, bool) {
	t, err := root.Readlink(p)
	if err != nil {
		return "", false
	}
	return blobOf(repo, p, t)
}

// blobsInUse walks the snapshots of repo in snapsDir: the blobs their entries link to, and how
// many entries there are.
func blobsInUse(root *os.Root, repo, snapsDir string) (inUse map[string]bool, entries int) {
	inUse = map[string]bool{}
	_ = fs.WalkDir(root.FS(), filepath.ToSlash(snapsDir), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		entries++
		if b, ok := linkedBlob(root, repo, filepath.FromSlash(p)); ok {
			inUse[b] = true
		}
		return nil
	})
	return inUse, entries
}

// NotPulledError refuses to delete a model that is not a Hub pull: a user's own file.
type NotPulledError struct{ ID, Path string }

func (e *NotPulledError) Error() string {
	return fmt.Sprintf("model %q is the file %s, not a model pulled from the Hugging Face Hub: delete it yourself if you mean to", e.ID, e.Path)
}

// Pulled is the ORG/REPO:QUANT model m was pulled from the Hub as; false for a user's own file.
func Pulled(m catalog.Model) (string, bool) {
	if _, _, ok := LocalFiles(m); !ok {
		return "", false
	}
	return m.HubName, true
}

// RemovePulled deletes model m's files from the Hub cache it was found in (Cache.Remove: its
// snapshot entries and the blobs nothing else uses) and returns the paths removed; a model that is
// not a Hub pull is refused with *NotPulledError. `llamatray rm` without an instance and the
// models window's Delete remove with it.
func RemovePulled(m catalog.Model) ([]string, error) {
	cache, files, ok := LocalFiles(m)
	if !ok {
		return nil, &NotPulledError{ID: m.ID, Path: m.Path}
	}
	removed, err := cache.Remove(m.HubRepo, files)
	if err != nil {
		return nil, fmt.Errorf("removing %s: %w", m.ID, err)
	}
	return removed, nil
}

// LocalFiles finds the Hub cache and repo paths of a model found in a Hub cache: its files are
// CACHE/models--ORG--REPO/snapshots/COMMIT/PATH.
func LocalFiles(m catalog.Model) (Cache, []string, bool) {
	if m.HubRepo == "" {
		return Cache{}, nil, false
	}
	var cache Cache
	var out []string
	files := append([]string(nil), m.Files...)
	if m.Mmproj != "" {
		files = append(files, m.Mmproj)
	}
	for _, f := range files {
		dir := filepath.Dir(f)
		rel := []string{filepath.Base(f)}
		for dir != filepath.Dir(dir) && filepath.Base(filepath.Dir(dir)) != "snapshots" {
			rel = append([]string{filepath.Base(dir)}, rel...)
			dir = filepath.Dir(dir)
		}
		repoDir := filepath.Dir(filepath.Dir(dir))
		if !strings.HasPrefix(filepath.Base(repoDir), "models--") {
			return Cache{}, nil, false
		}
		c := Cache{Dir: filepath.Dir(repoDir)}
		if c.RepoDir(m.HubRepo) != repoDir {
			return Cache{}, nil, false
		}
		cache = c
		out = append(out, strings.Join(rel, "/"))
	}
	return cache, out, len(out) > 0
}

// keepShared leaves out of files the projectors that a model the removal keeps in the same
// snapshot folder (snap, relative to root) pairs with.
func keepShared(root *os.Root, snap string, files []string) []string {
	gone := map[string]bool{}
	for _, f := range files {
		gone[filepath.Clean(filepath.FromSlash(f))] = true
	}
	var out []string
	for _, f := range files {
		rel := filepath.Clean(filepath.FromSlash(f))
		if catalog.IsProjector(f) {
			entries, _ := fs.ReadDir(root.FS(), filepath.ToSlash(filepath.Join(snap, filepath.Dir(rel))))
			if slices.ContainsFunc(entries, func(e fs.DirEntry) bool {
				return !gone[filepath.Join(filepath.Dir(rel), e.Name())] && !catalog.IsProjector(e.Name()) && strings.HasSuffix(strings.ToLower(e.Name()), ".gguf")
			}) {
				continue
			}
		}
		out = append(out, f)
	}
	return out
}

// pruneEmpty removes empty folders under dir (dir kept), relative to root.
func pruneEmpty(root *os.Root, dir string) {
	var dirs []string
	_ = fs.WalkDir(root.FS(), filepath.ToSlash(dir), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && p != filepath.ToSlash(dir) {
			dirs = append(dirs, filepath.FromSlash(p))
		}
		return nil
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		_ = root.Remove(dirs[i]) // fails on non-empty folders, as intended
	}
}

// copyIn copies src to dst, both relative to root.
func copyIn(root *os.Root, src, dst string) error {
	in, err := root.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := root.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := out.ReadFrom(in); err != nil {
		out.Close()
		root.Remove(dst)
		return err
	}
	return out.Close()
}

// What the Hub (or a mirror set through HF_ENDPOINT) sends is checked here before it names a file:
// a commit, a tree path, a blob name. Every write then goes through an os.Root on the cache folder
// (cache.go), so that even a name these checks let through cannot leave it.

// ErrUnsafe is matched by the error of a listing or download that names a file Llamatray will not
// write: a commit that is not 40 hex digits, a path that is absolute, climbs with "..", or holds a
// backslash, a colon, NUL or another control character.
var ErrUnsafe = errors.New("unsafe name from the Hub")

// ErrTooLarge is matched when an answer of the Hub is longer than Llamatray reads.
var ErrTooLarge = errors.New("answer too large")

// Bounds on what is read from the Hub's API.
const (
	maxAPIAnswer   = 16 << 20 // one JSON answer (a search, a model, a page of a tree listing)
	maxTreeEntries = 100_000  // entries of one repo's tree listing, all pages together
	maxTreePages   = 100
	maxPathLen     = 1024
)

// validCommit reports whether s is a git commit as the Hub names revisions: 40 lowercase hex digits.
func validCommit(s string) bool { return len(s) == 40 && isHex(s) }

// validBlobName reports whether s names a blob of the cache: a sha256 (LFS files) or a git blob id.
func validBlobName(s string) bool { return (len(s) == 64 || len(s) == 40) && isHex(s) }

func isHex(s string) bool { return strings.Trim(s, "0123456789abcdef") == "" }

// checkRepoPath refuses a repo file path that could name anything but a file inside a snapshot
// folder: it must be relative, slash-separated, valid UTF-8, without empty, "." or ".." elements,
// backslashes, colons (drive letters and NTFS streams), NUL or other control characters.
func checkRepoPath(p string) error {
	bad := func(why string) error { return fmt.Errorf("%w: file path %q %s", ErrUnsafe, p, why) }
	switch {
	case p == "":
		return bad("is empty")
	case len(p) > maxPathLen:
		return bad(fmt.Sprintf("is longer than %d bytes", maxPathLen))
	case !utf8.ValidString(p):
		return bad("is not UTF-8")
	case strings.HasPrefix(p, "/"):
		return bad("is absolute")
	case strings.ContainsAny(p, `\:`):
		return bad("holds a backslash or a colon")
	case strings.ContainsFunc(p, unicode.IsControl):
		return bad("holds a control character")
	}
	for _, part := range strings.Split(p, "/") {
		switch part {
		case "":
			return bad("has an empty element")
		case ".", "..":
			return bad("has a . or .. element")
		}
	}
	if !filepath.IsLocal(filepath.FromSlash(p)) {
		return bad("is not a plain file name on this system") // Windows: NUL, COM1, …
	}
	return nil
}

// capped reads at most limit bytes of r; past that it fails with ErrTooLarge, so that an endless
// answer ends as an error instead of filling memory.
type capped struct {
	r     io.Reader
	limit int64
	read  int64
	what  string
}

func capReader(r io.Reader, limit int64, what string) io.Reader {
	return &capped{r: r, limit: limit, what: what}
}

func (c *capped) Read(p []byte) (int, error) {
	if c.read >= c.limit {
		// One byte more tells an answer of exactly limit bytes from a longer one.
		var one [1]byte
		if n, err := io.ReadFull(c.r, one[:]); n == 0 {
			return 0, err // io.EOF: the answer was exactly limit bytes
		}
		return 0, fmt.Errorf("%s: %w (more than %d MiB)", c.what, ErrTooLarge, c.limit>>20)
	}
	if left := c.limit - c.read; int64(len(p)) > left {
		p = p[:left]
	}
	n, err := c.r.Read(p)
	c.read += int64(n)
	return n, err
}

// hashBufs and hashBufSize bound what the background hasher holds: 8 × 256 KiB.
const (
	hashBufs    = 8
	hashBufSize = 256 << 10
)

// asyncHash computes a sha256 on its own goroutine, so that hashing a download overlaps reading
// and writing it. Write copies the bytes and returns (it waits only when every buffer is still
// being hashed); Sum waits for the rest and ends the goroutine. Use it from one goroutine.
type asyncHash struct {
	h    hash.Hash
	todo chan []byte
	free chan []byte
	done chan struct{}
}

func newAsyncHash() *asyncHash {
	a := &asyncHash{h: sha256.New(), todo: make(chan []byte, hashBufs), free: make(chan []byte, hashBufs), done: make(chan struct{})}
	for range hashBufs {
		a.free <- make([]byte, 0, hashBufSize)
	}
	go func() {
		defer close(a.done)
		for b := range a.todo {
			a.h.Write(b)
			a.free <- b
		}
	}()
	return a
}

// Write queues p for hashing.
func (a *asyncHash) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		b := <-a.free
		k := min(len(p), cap(b))
		a.todo <- append(b[:0], p[:k]...)
		p = p[k:]
	}
	return n, nil
}

// Sum returns the sha256 of everything written and stops the goroutine.
func (a *asyncHash) Sum() []byte {
	a.stop()
	return a.h.Sum(nil)
}

// stop ends the goroutine; further Writes are not allowed. It may be called more than once.
func (a *asyncHash) stop() {
	select {
	case <-a.done:
		return
	default:
	}
	close(a.todo)
	<-a.done
}
