package hub

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/catalog"
	dl "github.com/llamatray/llamatray/router/download"
	"github.com/llamatray/llamatray/router/testbed/fakehub"
	"github.com/llamatray/llamatray/router/testbed/ggufwrite"
)

const repoID = "Org/Tiny-GGUF"

// fixture publishes a repo of real GGUF files: two single-file quants, a split quant and a
// projector.
type fixture struct {
	hub   *fakehub.Hub
	c     *Client
	cache Cache
	src   string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	src := t.TempDir()
	files := map[string]string{}
	write := func(name string, width int, seed int64) {
		p := filepath.Join(src, filepath.Base(name))
		var err error
		if strings.HasPrefix(filepath.Base(name), "mmproj") {
			err = ggufwrite.WriteFile(p, ggufwrite.Projector(width))
		} else {
			err = ggufwrite.WriteLlama(p, ggufwrite.LlamaOptions{Width: width, Blocks: 2, Seed: seed})
		}
		if err != nil {
			t.Fatal(err)
		}
		files[name] = p
	}
	write("tiny-Q4_K_M.gguf", 64, 1)
	write("tiny-Q8_0.gguf", 128, 2)
	write("split/tiny-F16-00001-of-00002.gguf", 64, 3)
	write("split/tiny-F16-00002-of-00002.gguf", 64, 4)
	write("mmproj-tiny-f16.gguf", 64, 5)
	h := fakehub.New()
	t.Cleanup(h.Close)
	if err := h.AddRepo(repoID, files); err != nil {
		t.Fatal(err)
	}
	c := FromEnv(func(k string) string {
		if k == "HF_ENDPOINT" {
			return h.URL()
		}
		return ""
	})
	c.Token = ""
	return &fixture{hub: h, c: c, cache: Cache{Dir: filepath.Join(t.TempDir(), "hub")}, src: src}
}

func (f *fixture) listing(t *testing.T) *Listing {
	t.Helper()
	l, err := f.c.Files(context.Background(), "org/tiny-gguf")
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func (f *fixture) quant(t *testing.T, l *Listing, name string) Quant {
	t.Helper()
	q, err := l.Pick(name)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func TestSearchAndFiles(t *testing.T) {
	f := newFixture(t)
	repos, err := f.c.Search(context.Background(), "tiny", 10)
	if err != nil || len(repos) != 1 || repos[0].ID != repoID {
		t.Fatalf("search: %+v %v", repos, err)
	}
	l := f.listing(t)
	if l.Repo != repoID || l.Commit != f.hub.Commit(repoID) {
		t.Errorf("listing repo %q commit %q", l.Repo, l.Commit)
	}
	var names []string
	for _, q := range l.Quants {
		names = append(names, q.Name)
		want := int64(0)
		for _, x := range q.All() {
			want += x.Size
		}
		paired := q.Mmproj != nil && q.Mmproj.Path == "mmproj-tiny-f16.gguf"
		if q.Size != want || paired != (q.Name != "F16") { // the split quant's folder has no projector
			t.Errorf("%s: size %d (files %d), mmproj %+v", q.Name, q.Size, want, q.Mmproj)
		}
	}
	if strings.Join(names, ",") != "Q4_K_M,F16,Q8_0" {
		t.Errorf("quants by size: %v", names)
	}
	if q := f.quant(t, l, "f16"); len(q.Files) != 2 || !strings.HasSuffix(q.Files[1].Path, "00002-of-00002.gguf") {
		t.Errorf("split quant: %+v", q.Files)
	}
	if q := f.quant(t, l, ""); q.Name != "Q4_K_M" {
		t.Errorf("default pick %s", q.Name)
	}
	if _, err := l.Pick("Q2_K"); err == nil || !strings.Contains(err.Error(), "Q4_K_M") {
		t.Errorf("missing quant: %v", err)
	}
	if _, err := f.c.Files(context.Background(), "org/none"); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("missing repo: %v", err)
	}
}

// A pull lands in the Hub's cache layout, where the catalog finds it under ORG/REPO:QUANT.
func TestDownloadLayoutAndCatalog(t *testing.T) {
	f := newFixture(t)
	f.c.Token = "hf_secret" // public repo: harmless, and never sent to the content host
	l := f.listing(t)
	q := f.quant(t, l, "Q4_K_M")
	var last Progress
	paths, err := f.c.Download(context.Background(), f.cache, l, q, func(p Progress) { last = p })
	if err != nil {
		t.Fatal(err)
	}
	if last.Done != q.Size || last.Total != q.Size || len(last.Files) != 2 {
		t.Errorf("last progress %+v, want %d bytes", last, q.Size)
	}
	repo := f.cache.RepoDir(repoID)
	if filepath.Base(repo) != "models--Org--Tiny-GGUF" {
		t.Errorf("repo folder %s", repo)
	}
	ref, _ := os.ReadFile(filepath.Join(repo, "refs", "main"))
	if string(ref) != l.Commit {
		t.Errorf("refs/main = %q", ref)
	}
	for i, file := range q.All() {
		link := filepath.Join(repo, "snapshots", l.Commit, filepath.FromSlash(file.Path))
		if paths[i] != link {
			t.Errorf("path %s, want %s", paths[i], link)
		}
		target, err := os.Readlink(link)
		if err != nil || filepath.IsAbs(target) || filepath.Base(target) != file.SHA256 {
			t.Errorf("%s → %q (%v), want a relative link to blobs/%s", link, target, err, file.SHA256)
		}
	}
	if n := f.hub.ContentAuthorized(); n != 0 {
		t.Errorf("the token reached the content host %d times", n)
	}
	cat := catalog.New(catalog.Options{Dirs: []string{f.cache.Dir}})
	if err := cat.Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	m, ok := cat.Lookup("org/tiny-gguf:q4_k_m")
	if !ok || m.Mmproj == "" {
		t.Fatalf("catalog: %+v %v; models %+v", m, ok, cat.Models())
	}
	// A second pull of the same quant downloads nothing.
	before := f.hub.ContentRequests()
	if _, err := f.c.Download(context.Background(), f.cache, l, q, nil); err != nil {
		t.Fatal(err)
	}
	if f.hub.ContentRequests() != before {
		t.Error("a complete pull was downloaded again")
	}
}

func TestResumeAfterCut(t *testing.T) {
	f := newFixture(t)
	l := f.listing(t)
	q := f.quant(t, l, "Q8_0")
	f.hub.CutOnce(repoID, "tiny-Q8_0.gguf", q.Files[0].Size/2)
	if _, err := f.c.Download(context.Background(), f.cache, l, q, nil); err != nil {
		t.Fatal(err)
	}
	if f.hub.RangeRequests() == 0 {
		t.Error("the cut download did not resume with a range request")
	}
	assertBlob(t, f, q.Files[0])
}

// A partial file left by an earlier run (a crash, a reboot) is resumed, not downloaded again.
func TestResumeAfterRestart(t *testing.T) {
	f := newFixture(t)
	l := f.listing(t)
	q := f.quant(t, l, "Q8_0")
	q.Mmproj = nil
	file := q.Files[0]
	full, err := os.ReadFile(filepath.Join(f.src, "tiny-Q8_0.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	part := filepath.Join(f.cache.RepoDir(repoID), "blobs", file.SHA256+".incomplete")
	os.MkdirAll(filepath.Dir(part), 0o755)
	if err := os.WriteFile(part, full[:len(full)/3], 0o644); err != nil {
		t.Fatal(err)
	}
	var first Progress
	if _, err := f.c.Download(context.Background(), f.cache, l, q, func(p Progress) {
		if first.Total == 0 {
			first = p
		}
	}); err != nil {
		t.Fatal(err)
	}
	if f.hub.RangeRequests() != 1 || first.Done < int64(len(full)/3) {
		t.Errorf("range requests %d, first progress %d of %d", f.hub.RangeRequests(), first.Done, first.Total)
	}
	assertBlob(t, f, file)
}

func assertBlob(t *testing.T, f *fixture, file File) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(f.cache.RepoDir(repoID), "blobs", file.SHA256))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(filepath.Join(f.src, filepath.Base(file.Path)))
	if !bytes.Equal(b, want) {
		t.Error("blob differs from the published file")
	}
}

func TestWrongSHALeavesNothing(t *testing.T) {
	f := newFixture(t)
	f.hub.WrongSHA(repoID, "tiny-Q4_K_M.gguf")
	l := f.listing(t)
	_, err := f.c.Download(context.Background(), f.cache, l, f.quant(t, l, "Q4_K_M"), nil)
	var ce *ChecksumError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "refused and deleted") {
		t.Fatalf("err = %v", err)
	}
	assertNothing(t, f.cache)
}

func TestCancelLeavesNothing(t *testing.T) {
	f := newFixture(t)
	l := f.listing(t)
	q := f.quant(t, l, "Q8_0")
	started := f.hub.Stall(repoID, "tiny-Q8_0.gguf", q.Files[0].Size/2)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := f.c.Download(ctx, f.cache, l, q, nil)
		errc <- err
	}()
	<-started
	cancel()
	if err := <-errc; !errors.Is(err, ErrCancelled) {
		t.Fatalf("err = %v", err)
	}
	assertNothing(t, f.cache)
}

// assertNothing fails when the cache holds any file.
func assertNothing(t *testing.T, c Cache) {
	t.Helper()
	_ = filepath.WalkDir(c.Dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			t.Errorf("left behind: %s", p)
		}
		return nil
	})
}

func TestGatedRepo(t *testing.T) {
	f := newFixture(t)
	f.hub.Gate(repoID, "hf_good")
	l := f.listing(t)
	q := f.quant(t, l, "Q4_K_M")
	_, err := f.c.Download(context.Background(), f.cache, l, q, nil)
	var he *Error
	if !errors.As(err, &he) || he.Status != 401 || !he.Gated() || !strings.Contains(err.Error(), "HF_TOKEN") {
		t.Fatalf("no token: %v", err)
	}
	f.c.Token = "hf_bad"
	if _, err := f.c.Download(context.Background(), f.cache, l, q, nil); !errors.As(err, &he) || he.Status != 403 {
		t.Fatalf("wrong token: %v", err)
	}
	f.c.Token = "hf_good"
	if _, err := f.c.Download(context.Background(), f.cache, l, q, nil); err != nil {
		t.Fatal(err)
	}
	if n := f.hub.ContentAuthorized(); n != 0 {
		t.Errorf("the token reached the content host %d times", n)
	}
}

// The Hub answers a client without a token 401 RepoNotFound for a repo that does not exist (or is
// private): that is "not found", not "gated".
func TestRepoNotFoundIsNotGated(t *testing.T) {
	e := &Error{Status: 401, Code: "RepoNotFound", Repo: "org/nope"}
	if e.Gated() || !e.NotFound() || !strings.Contains(e.Error(), "not found") || !strings.Contains(e.Error(), "HF_TOKEN") {
		t.Errorf("%v: gated %v, not found %v", e, e.Gated(), e.NotFound())
	}
	g := &Error{Status: 401, Code: "GatedRepo", Repo: "org/gated"}
	if !g.Gated() || g.NotFound() {
		t.Errorf("%v: gated %v, not found %v", g, g.Gated(), g.NotFound())
	}
}

func TestTokenFromEnv(t *testing.T) {
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, "token"), []byte("hf_file\n"), 0o600)
	env := map[string]string{"HF_HOME": home}
	get := func(k string) string { return env[k] }
	if c := FromEnv(get); c.Token != "hf_file" || c.Endpoint != DefaultEndpoint {
		t.Errorf("token file: %+v", c)
	}
	env["HF_TOKEN"], env["HF_ENDPOINT"] = "hf_env", "http://mirror.example/"
	if c := FromEnv(get); c.Token != "hf_env" || c.Endpoint != "http://mirror.example" {
		t.Errorf("env: %+v", c)
	}
	if d := CacheDir(get); d != filepath.Join(home, "hub") {
		t.Errorf("cache dir %s", d)
	}
	env["HF_HUB_CACHE"] = "/x/y"
	if d := CacheDir(get); d != filepath.FromSlash("/x/y") {
		t.Errorf("cache dir %s", d)
	}
}

// Removing a quant deletes its blobs but keeps the projector another quant still uses.
func TestRemove(t *testing.T) {
	f := newFixture(t)
	l := f.listing(t)
	a, b := f.quant(t, l, "Q4_K_M"), f.quant(t, l, "Q8_0")
	for _, q := range []Quant{a, b} {
		if _, err := f.c.Download(context.Background(), f.cache, l, q, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.cache.Remove(repoID, []string{a.Files[0].Path, a.Mmproj.Path}); err != nil {
		t.Fatal(err)
	}
	blobs := filepath.Join(f.cache.RepoDir(repoID), "blobs")
	if _, err := os.Stat(filepath.Join(blobs, a.Files[0].SHA256)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("removed quant's blob still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(blobs, b.Mmproj.SHA256)); err != nil {
		t.Errorf("shared projector blob removed: %v", err)
	}
	if _, err := f.cache.Remove(repoID, []string{b.Files[0].Path, b.Mmproj.Path}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(f.cache.RepoDir(repoID)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("empty repo folder kept: %v", err)
	}
}

// The remote estimate reads only the header and agrees with the catalog's scan of the file.
func TestEstimateRemote(t *testing.T) {
	f := newFixture(t)
	l := f.listing(t)
	q := f.quant(t, l, "Q8_0")
	q.Mmproj = nil
	p := catalog.EstimateParams{ContextSize: 4096}
	est, facts, err := f.c.Estimate(context.Background(), l, q, p)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	os.Link(filepath.Join(f.src, "tiny-Q8_0.gguf"), filepath.Join(dir, "m.gguf"))
	cat := catalog.New(catalog.Options{Dirs: []string{dir}, Params: func(string) catalog.EstimateParams { return p }})
	cat.Scan(context.Background())
	if want := cat.Models()[0].Estimate; est != want || facts.Architecture != "llama" {
		t.Errorf("remote %+v, local %+v", est, want)
	}
	if f.hub.RangeRequests() != 1 {
		t.Errorf("%d range requests, want 1", f.hub.RangeRequests())
	}
}

// A disk too small for the model is refused before anything is written.
func TestDiskSpaceRefusedFirst(t *testing.T) {
	f := newFixture(t)
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a small tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", dir).Run() })
	cache := Cache{Dir: filepath.Join(dir, "hub")}
	l := f.listing(t)
	_, err := f.c.Download(context.Background(), cache, l, f.quant(t, l, "Q8_0"), nil)
	var de *dl.SpaceError
	if !errors.As(err, &de) || f.hub.ContentRequests() != 0 {
		t.Fatalf("err = %v, %d content requests", err, f.hub.ContentRequests())
	}
	assertNothing(t, cache)
	if _, err := os.Stat(cache.Dir); !errors.Is(err, fs.ErrNotExist) {
		t.Error("the refused download created the cache folder")
	}
}

// A download that stops sending is abandoned after the stall timeout and resumed from where it
// stopped.
func TestStallResumes(t *testing.T) {
	f := newFixture(t)
	f.c.StallTimeout = 200 * time.Millisecond
	l := f.listing(t)
	q := f.quant(t, l, "Q8_0")
	q.Mmproj = nil
	f.hub.Stall(repoID, "tiny-Q8_0.gguf", q.Files[0].Size/3)
	if _, err := f.c.Download(context.Background(), f.cache, l, q, nil); err != nil {
		t.Fatal(err)
	}
	if f.hub.RangeRequests() < 2 {
		t.Errorf("%d range requests, want the download resumed at least twice", f.hub.RangeRequests())
	}
	assertBlob(t, f, q.Files[0])
}

// RemovePulled deletes a pulled model's files from the cache it was found in, and refuses a user's
// own file with the sentence every surface shows.
func TestRemovePulled(t *testing.T) {
	f := newFixture(t)
	l := f.listing(t)
	q := f.quant(t, l, "Q4_K_M")
	paths, err := f.c.Download(context.Background(), f.cache, l, q, nil)
	if err != nil {
		t.Fatal(err)
	}
	pulled := catalog.Model{ID: "tiny", HubRepo: repoID, HubName: repoID + ":Q4_K_M", Path: paths[0], Files: paths[:1], Mmproj: paths[1]}
	if name, ok := Pulled(pulled); !ok || name != pulled.HubName {
		t.Errorf("Pulled = %q %v", name, ok)
	}
	own := catalog.Model{ID: "mine", Path: filepath.Join(t.TempDir(), "mine.gguf")}
	own.Files = []string{own.Path}
	if _, ok := Pulled(own); ok {
		t.Error("a user's own file counts as pulled")
	}
	var np *NotPulledError
	if _, err := RemovePulled(own); !errors.As(err, &np) || !strings.Contains(err.Error(), "delete it yourself") {
		t.Errorf("removing a user's own file: %v", err)
	}
	removed, err := RemovePulled(pulled)
	if err != nil || len(removed) == 0 {
		t.Fatalf("RemovePulled = %v %v", removed, err)
	}
	if _, err := os.Stat(f.cache.RepoDir(repoID)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the repo folder is still there: %v", err)
	}
}
