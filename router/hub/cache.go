package hub

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

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
func (c Cache) RepoDir(repo string) string {
	return filepath.Join(c.Dir, "models--"+strings.ReplaceAll(repo, "/", "--"))
}

func (c Cache) blob(repo, sha string) string {
	return filepath.Join(c.RepoDir(repo), "blobs", sha)
}

func (c Cache) snapshot(repo, commit, file string) string {
	return filepath.Join(c.RepoDir(repo), "snapshots", commit, filepath.FromSlash(file))
}

// link places the snapshot entry for file at the blob: a relative symlink, else a hard link,
// else a copy (Windows without developer mode).
func (c Cache) link(repo, commit, file, sha string) error {
	dst := c.snapshot(repo, commit, file)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	blob := c.blob(repo, sha)
	if target, err := os.Readlink(dst); err == nil {
		if abs(filepath.Dir(dst), target) == blob {
			return nil
		}
	}
	_ = os.Remove(dst)
	rel, err := filepath.Rel(filepath.Dir(dst), blob)
	if err != nil {
		return err
	}
	if err := os.Symlink(rel, dst); err == nil {
		return nil
	}
	if err := os.Link(blob, dst); err == nil {
		return nil
	}
	return copyFile(blob, dst)
}

func abs(dir, target string) string {
	if filepath.IsAbs(target) {
		return filepath.Clean(target)
	}
	return filepath.Join(dir, target)
}

// setRef writes refs/<name> = commit.
func (c Cache) setRef(repo, name, commit string) error {
	p := filepath.Join(c.RepoDir(repo), "refs", name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, []byte(commit), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}

// Remove deletes the snapshot entries of files (repo paths) in every snapshot of repo, then each
// blob nothing else in the repo refers to, then the repo folder once no snapshot holds a file.
// It returns the paths removed.
func (c Cache) Remove(repo string, files []string) ([]string, error) {
	dir := c.RepoDir(repo)
	snaps, err := os.ReadDir(filepath.Join(dir, "snapshots"))
	if err != nil {
		return nil, fmt.Errorf("%s is not in the Hub cache %s: %w", repo, c.Dir, err)
	}
	var removed []string
	blobs := map[string]bool{} // blobs the removed entries used
	for _, s := range snaps {
		for _, f := range keepShared(filepath.Join(dir, "snapshots", s.Name()), files) {
			p := filepath.Join(dir, "snapshots", s.Name(), filepath.FromSlash(f))
			if t, err := os.Readlink(p); err == nil {
				blobs[abs(filepath.Dir(p), t)] = true
			}
			if err := os.Remove(p); err == nil {
				removed = append(removed, p)
			} else if !errors.Is(err, fs.ErrNotExist) {
				return removed, err
			}
		}
	}
	inUse := map[string]bool{}
	files2 := 0
	_ = filepath.WalkDir(filepath.Join(dir, "snapshots"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		files2++
		if t, err := os.Readlink(p); err == nil {
			inUse[abs(filepath.Dir(p), t)] = true
		}
		return nil
	})
	for b := range blobs {
		if inUse[b] {
			continue
		}
		if err := os.Remove(b); err == nil {
			removed = append(removed, b)
			_ = os.Remove(c.lockPath(repo, filepath.Base(b)))
		}
	}
	if files2 == 0 {
		if err := os.RemoveAll(dir); err != nil {
			return removed, err
		}
		removed = append(removed, dir)
		locks := filepath.Dir(c.lockPath(repo, "x"))
		_ = os.RemoveAll(locks)
		_ = os.Remove(filepath.Dir(locks)) // only when empty
	} else {
		pruneEmpty(filepath.Join(dir, "snapshots"))
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
		var rel []string
		rel = append(rel, filepath.Base(f))
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
// snapshot folder pairs with.
func keepShared(snap string, files []string) []string {
	gone := map[string]bool{}
	for _, f := range files {
		gone[filepath.Clean(filepath.FromSlash(f))] = true
	}
	var out []string
	for _, f := range files {
		rel := filepath.Clean(filepath.FromSlash(f))
		if catalog.IsProjector(f) {
			entries, _ := os.ReadDir(filepath.Join(snap, filepath.Dir(rel)))
			shared := false
			for _, e := range entries {
				other := filepath.Join(filepath.Dir(rel), e.Name())
				if !gone[other] && !catalog.IsProjector(e.Name()) && strings.HasSuffix(strings.ToLower(e.Name()), ".gguf") {
					shared = true
				}
			}
			if shared {
				continue
			}
		}
		out = append(out, f)
	}
	return out
}

// pruneEmpty removes empty folders under root (root kept).
func pruneEmpty(root string) {
	var dirs []string
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && p != root {
			dirs = append(dirs, p)
		}
		return nil
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		_ = os.Remove(dirs[i]) // fails on non-empty folders, as intended
	}
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := out.ReadFrom(in); err != nil {
		out.Close()
		os.Remove(dst)
		return err
	}
	return out.Close()
}
