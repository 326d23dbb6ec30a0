package releases

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/testbed/ghreleases"
)

// The tests of hostile releases (security review, issue #20): each install fails with a clear error,
// nothing outside the store is written, and the store is as it was.

// hostile is a store with b7100 installed and in use, a victim file beside the store, and the
// stand-in that serves them.
type hostile struct {
	s     *ghreleases.Server
	in    *Installer
	top   string      // the store (llama-server/) and victim/ are all it holds
	state []byte      // state.json as it was
	names []string    // the store's entries as they were
	was   os.FileInfo // the victim as the file system keeps it (Windows: its own bits, rounded times)
}

const victimText = "the user's own file\n"

// victimTime is the victim's modification time: any write changes it.
var victimTime = time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)

// victimRel is the victim folder as a link from the install's staging folder reaches it
// (<top>/llama-server/.staging-…/../../victim).
const victimRel = "../../victim"

func newHostile(t *testing.T) *hostile {
	t.Helper()
	h := &hostile{s: standIn(t), top: t.TempDir()}
	h.in = newInstaller(h.s, filepath.Join(h.top, "llama-server"))
	if _, err := h.in.Install(context.Background(), Request{Build: "b7100"}, nil); err != nil {
		t.Fatal(err)
	}
	var err error
	if h.state, err = os.ReadFile(filepath.Join(h.in.Store.Root, stateFile)); err != nil {
		t.Fatal(err)
	}
	h.names = dirNames(t, h.in.Store.Root)
	victim := filepath.Join(h.top, "victim", ".profile")
	if err := os.MkdirAll(filepath.Dir(victim), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(victim, []byte(victimText), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(victim, victimTime, victimTime); err != nil {
		t.Fatal(err)
	}
	was, err := os.Stat(victim)
	if err != nil {
		t.Fatal(err)
	}
	h.was = was
	return h
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// publish adds release tag with entries packed as this system's archive of type ext (".zip",
// ".tar.gz"); it returns the asset's name.
func (h *hostile) publish(t *testing.T, tag, ext string, entries []ghreleases.Entry) string {
	t.Helper()
	name := ghreleases.AssetName(tag, ext)
	h.s.Add(tag, map[string][]byte{name: pack(t, ext, entries)})
	return name
}

func pack(t *testing.T, ext string, entries []ghreleases.Entry) []byte {
	t.Helper()
	pack := ghreleases.TarGz
	if ext == ".zip" {
		pack = ghreleases.Zip
	}
	data, err := pack(entries...)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// fakeEntries is the fake llama-server's build (llama-server, a library and its link, LICENSE) as
// archive entries in a llama-b7200/ folder.
func fakeEntries(t *testing.T) []ghreleases.Entry {
	t.Helper()
	fakeArchives(t)
	return archives.build.Entries("llama-b7200/")
}

// refused runs the install of req, which must fail, checks that it left everything as it was, and
// returns its error.
func (h *hostile) refused(t *testing.T, req Request) error {
	t.Helper()
	_, err := h.in.Install(context.Background(), req, nil)
	t.Logf("refused: %v", err)
	h.check(t)
	if err == nil {
		t.Fatal("the install succeeded")
	}
	return err
}

// check asserts that nothing outside the store was written and that the store is as it was: its
// state file intact, b7100 still in use, no other build and nothing left of the attempt.
func (h *hostile) check(t *testing.T) {
	t.Helper()
	victim := filepath.Join(h.top, "victim", ".profile")
	if b, err := os.ReadFile(victim); err != nil || string(b) != victimText {
		t.Errorf("the file outside the store was written: %q, %v", b, err)
	}
	if fi, err := os.Stat(victim); err != nil || !fi.ModTime().Equal(h.was.ModTime()) || fi.Mode() != h.was.Mode() {
		t.Errorf("the file outside the store was touched: %v %v, %v", fi.ModTime(), fi.Mode(), err)
	}
	if got := dirNames(t, filepath.Dir(victim)); !slices.Equal(got, []string{".profile"}) {
		t.Errorf("written beside the victim: %v", got)
	}
	if got := dirNames(t, h.top); !slices.Equal(got, []string{"llama-server", "victim"}) {
		t.Errorf("written beside the store: %v", got)
	}
	root := h.in.Store.Root
	if fi, err := os.Lstat(filepath.Join(root, stateFile)); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("%s is no longer a file: %v, %v", stateFile, fi, err)
	} else if b, _ := os.ReadFile(filepath.Join(root, stateFile)); string(b) != string(h.state) {
		t.Errorf("%s = %s, was %s", stateFile, b, h.state)
	}
	if got := dirNames(t, root); !slices.Equal(got, h.names) {
		t.Errorf("the store holds %v, it held %v", got, h.names)
	}
	if cur, ok := h.in.Store.Current(); !ok || cur.Build != "b7100" {
		t.Errorf("current = %+v, %v; want b7100 still", cur, ok)
	}
}

// needSymlinks skips where symbolic links cannot be made (Wine reports success and makes none).
func needSymlinks(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "link")
	if err := os.Symlink("target", p); err != nil {
		t.Skipf("no symbolic links here: %v", err)
	}
	if fi, err := os.Lstat(p); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Skip("no symbolic links here: the link made is not one")
	}
}

func wantErr(t *testing.T, err, target error, texts ...string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("err = %v, want %v", err, target)
	}
	for _, s := range texts {
		if err == nil || !strings.Contains(err.Error(), s) {
			t.Errorf("err = %v, want it to say %q", err, s)
		}
	}
}

// (2) a/b/c/up -> ../../.. and a/b/c/up/esc -> ../../victim each stay inside read from their own
// folder; written through up, esc landed at the staging folder's top and esc/.profile outside.
func TestLinkChainRefused(t *testing.T) {
	needSymlinks(t)
	for _, ext := range []string{".zip", ".tar.gz"} {
		t.Run(ext, func(t *testing.T) {
			h := newHostile(t)
			h.publish(t, "b7200", ext, append(ghreleases.LinkChain(victimRel, ".profile", []byte("pwned\n")), fakeEntries(t)...))
			err := h.refused(t, Request{})
			wantErr(t, err, ErrUnsafe, "a/b/c/up/esc", "a/b/c/up is a symbolic link")
		})
	}
}

// (2) A hard link whose source passes through a link (the chain's esc, or x that resolves to the
// store's parent) linked a file outside, and the next entry of its name wrote into it in place.
func TestHardLinkThroughLinkRefused(t *testing.T) {
	needSymlinks(t)
	for name, entries := range map[string][]ghreleases.Entry{
		"chain": ghreleases.HardLinkChain(victimRel, ".profile", []byte("pwned\n")),
		"out":   ghreleases.HardLinkOut(2, "victim/.profile", []byte("pwned\n")),
	} {
		t.Run(name, func(t *testing.T) {
			h := newHostile(t)
			h.publish(t, "b7200", ".tar.gz", append(entries, fakeEntries(t)...))
			err := h.refused(t, Request{})
			wantErr(t, err, ErrUnsafe, "is a symbolic link")
		})
	}
}

// (2) x -> a/b/c/up/../../../.. reads as inside but leads four levels above the build: the install
// is refused once the archive is unpacked, though nothing was written outside.
func TestLinkLeadingOutRefused(t *testing.T) {
	needSymlinks(t)
	for _, ext := range []string{".zip", ".tar.gz"} {
		t.Run(ext, func(t *testing.T) {
			h := newHostile(t)
			h.publish(t, "b7200", ext, append(fakeEntries(t), ghreleases.LinkOut(4)...))
			err := h.refused(t, Request{})
			wantErr(t, err, ErrUnsafe, "link x -> a/b/c/up/../../../..", "leads outside")
		})
	}
}

// (2) A llama-server that is a link leading outside (read as inside) was made executable there: the
// chmod followed it. The install is refused before, and the chmod goes through the staging folder.
func TestBinaryLinkOutRefused(t *testing.T) {
	needSymlinks(t)
	for _, ext := range []string{".zip", ".tar.gz"} {
		t.Run(ext, func(t *testing.T) {
			h := newHostile(t)
			h.publish(t, "b7200", ext, []ghreleases.Entry{
				{Name: "a/b/c/up", Mode: os.ModeSymlink | 0o777, Data: []byte("../../..")},
				{Name: "llama-b7200/" + BinaryName(), Mode: os.ModeSymlink | 0o777, Data: []byte("../a/b/c/up/" + victimRel + "/.profile")},
			})
			err := h.refused(t, Request{})
			wantErr(t, err, ErrUnsafe, "leads outside")
		})
	}
}

// (3) A release tag that names one of the store's own files (or anything but b<number>) is refused
// before anything is downloaded or written.
func TestHostileTagRefused(t *testing.T) {
	h := newHostile(t)
	for _, tag := range []string{stateFile, manifestFile, ".staging-b7200-1", ".download-1-x.zip", ".", "..", "b7200/../x",
		"B7200", "b7200 ", "b7200\n", "b", "b1234567890", "nightly", "7200", "b-1"} {
		_, tgz := fakeArchives(t)
		h.s.Add(tag, map[string][]byte{ghreleases.AssetName(tag, ".tar.gz"): tgz})
		n := h.s.Downloads()
		for _, req := range []Request{{}, {Build: Latest, Update: true}} {
			err := h.refused(t, req)
			wantErr(t, err, ErrBadTag, fmt.Sprintf("%q", tag))
		}
		if h.s.Downloads() != n {
			t.Errorf("tag %q: %d downloads", tag, h.s.Downloads()-n)
		}
	}
}

// (3) Store.Get and Builds know only folders named as builds: a folder of another name, with a
// build's manifest in it, is no build, and state.json naming it names none.
func TestStoreOnlyTagFolders(t *testing.T) {
	h := newHostile(t)
	root := h.in.Store.Root
	if err := os.CopyFS(filepath.Join(root, "nightly"), os.DirFS(h.in.Store.Dir("b7100"))); err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{"nightly", stateFile, "..", "."} {
		if _, err := h.in.Store.Get(b); !errors.Is(err, ErrNotInstalled) || !strings.Contains(err.Error(), "not a llama.cpp build") {
			t.Errorf("Get(%q) = %v", b, err)
		}
	}
	if builds, err := h.in.Store.Builds(); err != nil || len(builds) != 1 || builds[0].Build != "b7100" {
		t.Errorf("builds = %+v, %v", builds, err)
	}
	if err := writeJSON(filepath.Join(root, stateFile), State{Current: "nightly"}); err != nil {
		t.Fatal(err)
	}
	if b, ok := h.in.Store.Current(); ok {
		t.Errorf("current = %+v", b)
	}
}
