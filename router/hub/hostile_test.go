package hub

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dl "github.com/llamatray/llamatray/router/download"
	"github.com/llamatray/llamatray/router/testbed"
	"github.com/llamatray/llamatray/router/testbed/ggufwrite"
)

// A hostile mirror (HF_ENDPOINT) tries to make a pull write or delete outside the Hub cache, or to
// read without end. Each test plants a user's file outside the cache and checks it is untouched.

const evilRepo = "Org/Evil-GGUF"

// hostile is a home folder with the Hub cache at its usual place and a user's own model outside it.
type hostile struct {
	*fixture
	home, victim string
	want         []byte
}

func newHostile(t *testing.T) *hostile {
	t.Helper()
	f := newFixture(t)
	home := t.TempDir()
	f.cache = Cache{Dir: filepath.Join(home, ".cache", "huggingface", "hub")}
	victim := filepath.Join(home, "models", "victim-Q4_K_M.gguf")
	if err := os.MkdirAll(filepath.Dir(victim), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := ggufwrite.WriteLlama(victim, ggufwrite.LlamaOptions{Width: 64, Blocks: 2, Seed: 9}); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(victim)
	if err != nil {
		t.Fatal(err)
	}
	return &hostile{fixture: f, home: home, victim: victim, want: want}
}

// publish adds evilRepo with files: repo path → content.
func (h *hostile) publish(t *testing.T, files map[string][]byte) {
	t.Helper()
	local := map[string]string{}
	for p, b := range files {
		l := filepath.Join(t.TempDir(), "f.gguf")
		if err := os.WriteFile(l, b, 0o644); err != nil {
			t.Fatal(err)
		}
		local[p] = l
	}
	if err := h.hub.AddRepo(evilRepo, local); err != nil {
		t.Fatal(err)
	}
}

// assertVictim fails unless the user's file is still a regular file with its bytes.
func (h *hostile) assertVictim(t *testing.T) {
	t.Helper()
	st, err := os.Lstat(h.victim)
	if err != nil || !st.Mode().IsRegular() {
		t.Fatalf("the user's file %s: %v %v", h.victim, st, err)
	}
	if b, _ := os.ReadFile(h.victim); !bytes.Equal(b, h.want) {
		t.Fatalf("the user's file %s was changed", h.victim)
	}
}

// assertOnlyCacheAndModels fails when anything but the cache and the user's models folder is in home.
func (h *hostile) assertOnlyCacheAndModels(t *testing.T) {
	t.Helper()
	ents, _ := os.ReadDir(h.home)
	for _, e := range ents {
		if e.Name() != ".cache" && e.Name() != "models" {
			t.Errorf("written outside the cache: %s", filepath.Join(h.home, e.Name()))
		}
	}
	ents, _ = os.ReadDir(filepath.Dir(h.victim))
	if len(ents) != 1 {
		t.Errorf("the models folder holds %d entries, want only the user's file", len(ents))
	}
}

func (h *hostile) gguf(t *testing.T, seed int64) []byte {
	t.Helper()
	p := filepath.Join(t.TempDir(), "m.gguf")
	if err := ggufwrite.WriteLlama(p, ggufwrite.LlamaOptions{Width: 64, Blocks: 2, Seed: seed}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// handListing is the listing a hostile mirror would make Download see, bypassing Files' checks.
func (h *hostile) handListing(t *testing.T, commit, path string) (*Listing, Quant) {
	t.Helper()
	data := h.gguf(t, 3)
	h.publish(t, map[string][]byte{path: data})
	if commit == "" {
		commit = h.hub.Commit(evilRepo)
	}
	f := File{Path: path, Size: int64(len(data)), SHA256: h.hub.SHA256(evilRepo, path)}
	q := Quant{Name: "Q4_K_M", Files: []File{f}, Size: f.Size}
	return &Listing{Repo: evilRepo, Commit: commit, Quants: []Quant{q}}, q
}

// A tree entry that climbs out of the snapshot folder onto the user's own model is refused by the
// listing and by the download, before any byte is fetched.
func TestHostileTreePathRefused(t *testing.T) {
	h := newHostile(t)
	escape := "../../../../../../models/victim-Q4_K_M.gguf" // snapshots/<commit>/ → home/models
	l, q := h.handListing(t, "", escape)
	if _, err := h.c.Files(context.Background(), evilRepo); !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), "..") {
		t.Fatalf("listing: %v", err)
	}
	_, err := h.c.Download(context.Background(), h.cache, l, q, nil)
	if !errors.Is(err, ErrUnsafe) || h.hub.ContentRequests() != 0 {
		t.Fatalf("download: %v, %d content requests", err, h.hub.ContentRequests())
	}
	h.assertVictim(t)
	h.assertOnlyCacheAndModels(t)
	assertNothing(t, h.cache)
}

// Names with a newline, NUL, a backslash, a colon or an absolute path are refused too.
func TestHostileNamesRefused(t *testing.T) {
	for _, p := range []string{"a\nb-Q4_K_M.gguf", "a\x00b-Q4_K_M.gguf", `..\..\x-Q4_K_M.gguf`, "/etc/x-Q4_K_M.gguf", "C:x-Q4_K_M.gguf", "a//b-Q4_K_M.gguf", "./x-Q4_K_M.gguf"} {
		h := newHostile(t)
		h.publish(t, map[string][]byte{p: h.gguf(t, 1)})
		if _, err := h.c.Files(context.Background(), evilRepo); !errors.Is(err, ErrUnsafe) {
			t.Errorf("%q: listing %v", p, err)
		}
	}
}

// Even a name the checks let through cannot leave the cache: every write goes through its os.Root.
func TestCacheRootConfinesLinks(t *testing.T) {
	h := newHostile(t)
	root, err := h.cache.open()
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	sha := strings.Repeat("a", 64)
	if err := root.MkdirAll(filepath.Dir(blobRel(evilRepo, sha)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := root.WriteFile(blobRel(evilRepo, sha), []byte("GGUF"), 0o644); err != nil {
		t.Fatal(err)
	}
	err = link(root, evilRepo, strings.Repeat("b", 40), "../../../../../../models/victim-Q4_K_M.gguf", sha)
	if err == nil {
		t.Fatal("a link outside the cache was made")
	}
	h.assertVictim(t)
	h.assertOnlyCacheAndModels(t)
}

// A blobs folder that links out of the cache (planted by another program) is not written through.
func TestCacheRootConfinesBlobs(t *testing.T) {
	h := newHostile(t)
	l := h.listing(t)
	q := h.quant(t, l, "Q4_K_M")
	repo := h.cache.RepoDir(repoID)
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	testbed.Symlink(t, filepath.Join("..", "..", "..", "models"), filepath.Join(repo, "blobs"))
	if _, err := h.c.Download(context.Background(), h.cache, l, q, nil); err == nil {
		t.Fatal("the download wrote through a link out of the cache")
	}
	h.assertVictim(t)
	h.assertOnlyCacheAndModels(t)
}

// A commit that is not 40 hex digits names no snapshot folder.
func TestHostileCommitRefused(t *testing.T) {
	h := newHostile(t)
	l, q := h.handListing(t, "../../../../../escaped", "x-Q4_K_M.gguf")
	h.hub.SetCommit(evilRepo, l.Commit)
	if _, err := h.c.Files(context.Background(), evilRepo); !errors.Is(err, ErrUnsafe) {
		t.Fatalf("listing: %v", err)
	}
	if _, err := h.c.Download(context.Background(), h.cache, l, q, nil); !errors.Is(err, ErrUnsafe) {
		t.Fatalf("download: %v", err)
	}
	h.assertOnlyCacheAndModels(t)
	if _, err := os.Stat(filepath.Join(h.home, "escaped")); !errors.Is(err, fs.ErrNotExist) {
		t.Error("a snapshot was written outside the cache")
	}
}

// Removing a model deletes the snapshot entry and its blob, never the target of an entry that links
// outside the repo's blobs folder.
func TestRemoveKeepsForeignTargets(t *testing.T) {
	h := newHostile(t)
	l := h.listing(t)
	q := h.quant(t, l, "Q4_K_M")
	if _, err := h.c.Download(context.Background(), h.cache, l, q, nil); err != nil {
		t.Fatal(err)
	}
	snap := filepath.Join(h.cache.RepoDir(repoID), "snapshots", l.Commit)
	entry := filepath.Join(snap, q.Files[0].Path)
	rel, _ := filepath.Rel(filepath.Dir(entry), h.victim)
	os.Remove(entry)
	testbed.Symlink(t, rel, entry)
	removed, err := h.cache.Remove(repoID, []string{q.Files[0].Path, q.Mmproj.Path})
	if err != nil {
		t.Fatal(err)
	}
	h.assertVictim(t)
	for _, p := range removed {
		if p == h.victim {
			t.Errorf("Remove reports the user's file removed")
		}
	}
	if _, err := os.Lstat(entry); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the snapshot entry is still there: %v", err)
	}
	// An absolute link, and a name that climbs, are no blobs either.
	if _, err := h.cache.Remove(repoID, []string{"../../x.gguf"}); !errors.Is(err, ErrUnsafe) {
		t.Errorf("climbing name: %v", err)
	}
}

// An endless tree listing ends as an error once the bound is read.
func TestEndlessTreeListing(t *testing.T) {
	h := newHostile(t)
	h.publish(t, map[string][]byte{"x-Q4_K_M.gguf": h.gguf(t, 1)})
	h.hub.EndlessTree(evilRepo)
	_, err := h.c.Files(context.Background(), evilRepo)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err = %v", err)
	}
	if n := h.hub.TreeBytes(); n > 2*maxAPIAnswer {
		t.Errorf("the mirror sent %d MiB before the listing was refused", n>>20)
	}
}

// A server that ignores Range and cuts every answer at the same byte is given up on after a few
// tries that bring nothing new, with the partial file kept for a later try.
func TestRangeIgnoredAndCutGivesUp(t *testing.T) {
	h := newHostile(t)
	l := h.listing(t)
	q := h.quant(t, l, "Q8_0")
	q.Mmproj = nil
	h.hub.IgnoreRange(repoID, "tiny-Q8_0.gguf", q.Files[0].Size/2)
	start := time.Now()
	_, err := h.c.Download(context.Background(), h.cache, l, q, nil)
	if err == nil || !strings.Contains(err.Error(), "download failed after") || !strings.Contains(err.Error(), "kept for the next try") {
		t.Fatalf("err = %v", err)
	}
	if n := h.hub.ContentRequests(); n > maxStalls+1 {
		t.Errorf("%d requests for a file that never comes (%s)", n, time.Since(start))
	}
	part := filepath.Join(h.cache.RepoDir(repoID), "blobs", q.Files[0].SHA256+".incomplete")
	if st, err := os.Stat(part); err != nil || st.Size() != q.Files[0].Size/2 {
		t.Errorf("partial file %v %v, want %d bytes kept", st, err, q.Files[0].Size/2)
	}
}

// A server that ignores Range but sends the whole file resumes by skipping what is already here.
func TestRangeIgnoredResumesBySkipping(t *testing.T) {
	h := newHostile(t)
	l := h.listing(t)
	q := h.quant(t, l, "Q8_0")
	q.Mmproj = nil
	h.hub.IgnoreRange(repoID, "tiny-Q8_0.gguf", 0)
	h.hub.CutOnce(repoID, "tiny-Q8_0.gguf", q.Files[0].Size/2)
	if _, err := h.c.Download(context.Background(), h.cache, l, q, nil); err != nil {
		t.Fatal(err)
	}
	if n := h.hub.ContentRequests(); n != 2 {
		t.Errorf("%d content requests, want 2 (the cut one and the resume)", n)
	}
	assertBlob(t, h.fixture, q.Files[0])
}

// Sizes that lie: 0 or negative is refused before a byte is fetched; a smaller one is refused as
// soon as the answer says it is larger (download.ErrTooLarge) and leaves nothing.
func TestListedSizeLies(t *testing.T) {
	for _, size := range []int64{0, -5} {
		h := newHostile(t)
		h.hub.ListSize(repoID, "tiny-Q4_K_M.gguf", size)
		l := h.listing(t)
		_, err := h.c.Download(context.Background(), h.cache, l, h.quant(t, l, "Q4_K_M"), nil)
		if err == nil || !strings.Contains(err.Error(), "size") || h.hub.ContentRequests() != 0 {
			t.Errorf("size %d: %v, %d content requests", size, err, h.hub.ContentRequests())
		}
		assertNothing(t, h.cache)
	}
	h := newHostile(t)
	l := h.listing(t)
	real := h.quant(t, l, "Q4_K_M").Files[0].Size
	h.hub.ListSize(repoID, "tiny-Q4_K_M.gguf", real/2)
	l = h.listing(t)
	if _, err := h.c.Download(context.Background(), h.cache, l, h.quant(t, l, "Q4_K_M"), nil); !errors.Is(err, dl.ErrTooLarge) || !errors.Is(err, ErrTooLarge) {
		t.Fatalf("smaller size: %v", err)
	}
	assertNothing(t, h.cache)
}

// A file listed as GGUF whose bytes are not is refused after its checksum, and undone.
func TestNotGGUFUndone(t *testing.T) {
	h := newHostile(t)
	h.publish(t, map[string][]byte{"x-Q4_K_M.gguf": []byte("<html>not a model</html>")})
	l, err := h.c.Files(context.Background(), evilRepo)
	if err != nil {
		t.Fatal(err)
	}
	q, _ := l.Pick("Q4_K_M")
	_, err = h.c.Download(context.Background(), h.cache, l, q, nil)
	var ng *NotGGUFError
	if !errors.As(err, &ng) || !strings.Contains(err.Error(), "x-Q4_K_M.gguf is not a GGUF model") {
		t.Fatalf("err = %v", err)
	}
	assertNothing(t, h.cache)
}

// A pull the catalog then does not list is undone, refs/main put back as it was.
func TestManagerUndoesWhatTheCatalogRefuses(t *testing.T) {
	h := newHostile(t)
	l := h.listing(t)
	if _, err := h.c.Download(context.Background(), h.cache, l, h.quant(t, l, "Q8_0"), nil); err != nil {
		t.Fatal(err)
	}
	ref := filepath.Join(h.cache.RepoDir(repoID), "refs", "main")
	os.WriteFile(ref, []byte(strings.Repeat("c", 40)), 0o644) // an older commit
	m := NewManager(h.c, h.cache, func(string, []string) error { return errors.New("not listed by the catalog") }, nil)
	st, err := m.Start(context.Background(), Ref{Repo: repoID, Quant: "Q4_K_M"})
	if err != nil {
		t.Fatal(err)
	}
	end, err := m.Wait(context.Background(), st.Model)
	if err != nil || end.State != StateFailed || !strings.Contains(end.Error, "not listed") {
		t.Fatalf("pull: %+v %v", end, err)
	}
	if b, _ := os.ReadFile(ref); string(b) != strings.Repeat("c", 40) {
		t.Errorf("refs/main = %q, want it put back", b)
	}
	q4 := h.quant(t, l, "Q4_K_M")
	if _, err := os.Stat(filepath.Join(h.cache.RepoDir(repoID), "blobs", q4.Files[0].SHA256)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the refused pull's blob is still there: %v", err)
	}
	assertBlob(t, h.fixture, h.quant(t, l, "Q8_0").Files[0]) // the earlier pull is untouched
}
