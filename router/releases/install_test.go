package releases

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/llamatray/llamatray/router/download"
	"github.com/llamatray/llamatray/router/locate"
	"github.com/llamatray/llamatray/router/testbed"
	"github.com/llamatray/llamatray/router/testbed/ghreleases"
)

// archives are the fake llama-server packed once per test binary (packing is slow under -race).
var archives struct {
	once     sync.Once
	build    *ghreleases.Build
	zip, tgz []byte
	err      error
}

// fakeArchives returns the fake llama-server as a .zip and as a .tar.gz in a llama-b7100/ folder.
func fakeArchives(t *testing.T) (zipped, tgz []byte) {
	t.Helper()
	archives.once.Do(func() {
		var b *ghreleases.Build
		if b, archives.err = ghreleases.FromBinary(testbed.FakeLlamaServer(t)); archives.err != nil {
			return
		}
		archives.build = b
		if archives.zip, archives.err = b.Zip(); archives.err != nil {
			return
		}
		archives.tgz, archives.err = b.TarGz("b7100")
	})
	if archives.err != nil {
		t.Fatal(archives.err)
	}
	return archives.zip, archives.tgz
}

// standIn publishes b6000 as a .zip and b7100 as a .tar.gz, both wrapping the fake llama-server.
func standIn(t *testing.T) *ghreleases.Server {
	t.Helper()
	zipped, tgz := fakeArchives(t)
	s := ghreleases.New()
	t.Cleanup(s.Close)
	s.Add("b6000", map[string][]byte{ghreleases.AssetName("b6000", ".zip"): zipped, "llama-b6000-xcframework.zip": []byte("not for us")})
	s.Add("b7100", map[string][]byte{ghreleases.AssetName("b7100", ".tar.gz"): tgz, "cudart-llama-bin-win-cuda-12.4-x64.zip": []byte("x")})
	return s
}

func newInstaller(s *ghreleases.Server, root string) *Installer {
	return &Installer{
		Client: &Client{Base: s.Base},
		Store:  Store{Root: root},
		System: func(context.Context) System { return System{OS: runtime.GOOS, Arch: runtime.GOARCH} },
		Verify: locate.Version,
	}
}

// files lists the regular files and links under root.
func files(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			out = append(out, p)
		}
		return nil
	})
	return out
}

func TestInstallUpdateRollback(t *testing.T) {
	s := standIn(t)
	root := filepath.Join(t.TempDir(), "llama-server")
	in := newInstaller(s, root)
	ctx := context.Background()

	var phases []string
	b, err := in.Install(ctx, Request{Build: "b6000"}, func(p Progress) {
		if len(phases) == 0 || phases[len(phases)-1] != p.Phase {
			phases = append(phases, p.Phase)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(phases, " "); got != "chosen downloading verified unpacking done" {
		t.Errorf("phases = %s", got)
	}
	if b.Build != "b6000" || !b.Current || b.Binary != BinaryName() || !strings.Contains(b.Version, "(") {
		t.Errorf("installed %+v", b)
	}
	if fi, err := os.Stat(b.Path); err != nil || fi.Mode().Perm()&0o111 == 0 {
		t.Fatalf("llama-server %s: %v %v", b.Path, fi, err)
	}
	dir := filepath.Dir(b.Path)
	if _, err := os.Stat(filepath.Join(dir, "libggml-base.so")); err != nil {
		t.Errorf("library not kept beside llama-server: %v", err)
	}
	if link, err := os.Readlink(filepath.Join(dir, "libggml.so.0")); err != nil || link != "libggml-base.so" {
		t.Errorf("symlink = %q, %v", link, err)
	}
	if v, err := locate.Version(ctx, b.Path); err != nil || v != b.Version {
		t.Errorf("installed llama-server --version = %q, %v", v, err)
	}

	// latest is b7100, a .tar.gz with a llama-b7100/ folder.
	b, err = in.Install(ctx, Request{Build: Latest}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b.Build != "b7100" || b.Binary != "llama-b7100/"+BinaryName() {
		t.Errorf("update installed %+v", b)
	}
	if st, _ := in.Store.State(); st != (State{Current: "b7100", Previous: "b6000"}) {
		t.Errorf("state = %+v", st)
	}
	if cur, _ := in.Store.Current(); cur.Path != b.Path {
		t.Errorf("Current = %s, want %s", cur.Path, b.Path)
	}

	// Installing it again downloads nothing.
	n := s.Downloads()
	var msg string
	if _, err := in.Install(ctx, Request{Build: "b7100"}, func(p Progress) { msg = p.Message }); err != nil {
		t.Fatal(err)
	}
	if s.Downloads() != n || !strings.Contains(msg, "already installed") {
		t.Errorf("reinstall downloaded %d times, said %q", s.Downloads()-n, msg)
	}

	// Rollback and forward again.
	if b, err := in.Use("previous"); err != nil || b.Build != "b6000" {
		t.Fatalf("rollback: %+v %v", b, err)
	}
	if cur, _ := in.Store.Current(); cur.Build != "b6000" {
		t.Errorf("current after rollback = %s", cur.Build)
	}
	if _, err := in.Use("b7100"); err != nil {
		t.Fatal(err)
	}
	if _, err := in.Use("b9999"); err == nil || !strings.Contains(err.Error(), "not installed") {
		t.Errorf("use of a missing build: %v", err)
	}
	builds, err := in.Store.Builds()
	if err != nil || len(builds) != 2 || builds[0].Build != "b7100" || !builds[0].Current {
		t.Errorf("builds = %+v, %v", builds, err)
	}
	for _, f := range files(t, root) {
		if strings.HasPrefix(filepath.Base(f), ".") {
			t.Errorf("left over: %s", f)
		}
	}
}

func TestPruneKeepsPreviousAndBuildsInUse(t *testing.T) {
	s := standIn(t)
	root := t.TempDir()
	in := newInstaller(s, root)
	ctx := context.Background()
	for _, b := range []string{"b6000", "b7100"} {
		if _, err := in.Install(ctx, Request{Build: b}, nil); err != nil {
			t.Fatal(err)
		}
	}
	_, data := fakeArchives(t) // its folder is llama-b7100/: the binary is found wherever it is
	s.Add("b7200", map[string][]byte{ghreleases.AssetName("b7200", ".tar.gz"): data})

	inUse := in.Store.Dir("b6000")
	in.InUse = func(dir string) bool { return dir == inUse }
	if _, err := in.Install(ctx, Request{}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(in.Store.Dir("b6000")); err != nil {
		t.Errorf("a build in use was removed: %v", err)
	}
	in.InUse = nil
	s.Add("b7300", map[string][]byte{ghreleases.AssetName("b7300", ".tar.gz"): data})
	if _, err := in.Install(ctx, Request{}, nil); err != nil {
		t.Fatal(err)
	}
	var got []string
	builds, _ := in.Store.Builds()
	for _, b := range builds {
		got = append(got, b.Build)
	}
	if strings.Join(got, ",") != "b7300,b7200" {
		t.Errorf("builds kept = %v, want the current and the previous", got)
	}
}

func TestReplaceRefusedWhileInUse(t *testing.T) {
	s := standIn(t)
	root := t.TempDir()
	in := newInstaller(s, root)
	ctx := context.Background()
	b, err := in.Install(ctx, Request{Build: "b7100"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The build on disk differs from the published one (say, a damaged install): installing it again
	// replaces it, but not while a model runs on it.
	var m Build
	raw, _ := os.ReadFile(filepath.Join(root, "b7100", manifestFile))
	json.Unmarshal(raw, &m)
	m.SHA256 = "0000"
	if err := writeJSON(filepath.Join(root, "b7100", manifestFile), m); err != nil {
		t.Fatal(err)
	}
	in.InUse = func(dir string) bool { return strings.HasPrefix(b.Path, dir) }
	if _, err := in.Install(ctx, Request{Build: "b7100"}, nil); !errors.Is(err, ErrInUse) {
		t.Fatalf("err = %v, want ErrInUse", err)
	}
	in.InUse = nil
	if b2, err := in.Install(ctx, Request{Build: "b7100"}, nil); err != nil || b2.SHA256 == "0000" {
		t.Fatalf("replace: %+v %v", b2, err)
	}
}

func TestDigestMismatchLeavesNothing(t *testing.T) {
	s := standIn(t)
	s.Corrupt.Store(true)
	root := filepath.Join(t.TempDir(), "llama-server")
	in := newInstaller(s, root)
	_, err := in.Install(context.Background(), Request{}, nil)
	if !errors.Is(err, ErrDigest) || !strings.Contains(err.Error(), "deleted") {
		t.Fatalf("err = %v, want a sha256 mismatch", err)
	}
	if f := files(t, root); len(f) > 0 {
		t.Errorf("files left: %v", f)
	}
	if _, ok := in.Store.Current(); ok {
		t.Error("a build is current after a refused download")
	}
}

func TestCutDownloadLeavesNothing(t *testing.T) {
	s := standIn(t)
	s.CutAt.Store(100 << 10)
	root := filepath.Join(t.TempDir(), "llama-server")
	in := newInstaller(s, root)
	_, err := in.Install(context.Background(), Request{}, nil)
	if !errors.Is(err, ErrCut) || !strings.Contains(err.Error(), "stopped after 100 KiB of") {
		t.Fatalf("err = %v, want a cut download", err)
	}
	if f := files(t, root); len(f) > 0 {
		t.Errorf("files left: %v", f)
	}
}

func TestNoSuchBuild(t *testing.T) {
	s := standIn(t)
	in := newInstaller(s, t.TempDir())
	if _, err := in.Install(context.Background(), Request{Build: "b1"}, nil); !errors.Is(err, ErrNoRelease) {
		t.Fatalf("err = %v, want ErrNoRelease", err)
	}
	if _, err := in.Install(context.Background(), Request{Backend: "cuda"}, nil); !errors.Is(err, ErrNoBuild) {
		t.Fatalf("err = %v, want ErrNoBuild", err)
	}
}

func TestCheckSpace(t *testing.T) {
	err := download.CheckSpace(t.TempDir(), 1<<60)
	if !errors.Is(err, ErrDiskFull) || !strings.Contains(err.Error(), "needed") {
		t.Fatalf("err = %v, want not enough space", err)
	}
	if err := download.CheckSpace(t.TempDir(), 1); err != nil {
		t.Fatal(err)
	}
}

func TestUnpackRefusesEntriesOutside(t *testing.T) {
	dir := t.TempDir()
	var tb bytes.Buffer
	gz := gzip.NewWriter(&tb)
	tw := tar.NewWriter(gz)
	tw.WriteHeader(&tar.Header{Name: "llama-b1/../../evil", Mode: 0o644, Size: 1, Typeflag: tar.TypeReg})
	tw.Write([]byte("x"))
	tw.Close()
	gz.Close()
	tgz := filepath.Join(dir, "a.tar.gz")
	os.WriteFile(tgz, tb.Bytes(), 0o644)
	out := filepath.Join(dir, "out")
	os.Mkdir(out, 0o755)
	if err := unpack(tgz, "a.tar.gz", out, noLimit); !errors.Is(err, ErrUnsafe) {
		t.Errorf("tar with ..: %v", err)
	}

	var zb bytes.Buffer
	zw := zip.NewWriter(&zb)
	h := &zip.FileHeader{Name: "libx.so"}
	h.SetMode(fs.ModeSymlink | 0o777)
	w, _ := zw.CreateHeader(h)
	w.Write([]byte("/etc/passwd"))
	zw.Close()
	zp := filepath.Join(dir, "a.zip")
	os.WriteFile(zp, zb.Bytes(), 0o644)
	if err := unpack(zp, "a.zip", out, noLimit); !errors.Is(err, ErrUnsafe) {
		t.Errorf("zip with a link outside: %v", err)
	}
	if f := files(t, out); len(f) > 0 {
		t.Errorf("written: %v", f)
	}
	for _, name := range []string{"/abs", `C:\x`, "a/../../b"} {
		if _, err := entryName(name); !errors.Is(err, ErrUnsafe) {
			t.Errorf("entryName(%q) = %v", name, err)
		}
	}
	if p, err := entryName("./llama-b1/llama-server"); err != nil || p != "llama-b1/llama-server" {
		t.Errorf("entryName = %s, %v", p, err)
	}
}

// An installer may ship a build in the same layout beside the executable; Store reads it like its own.
func TestBundledLayout(t *testing.T) {
	s := standIn(t)
	app := t.TempDir()
	exe := filepath.Join(app, "llamatray")
	roots := BundledRoots(exe)
	if len(roots) != 1 || roots[0] != filepath.Join(app, "llama-server") {
		t.Fatalf("roots = %v", roots)
	}
	if got := BundledRoots("/Applications/Llamatray.app/Contents/MacOS/llamatray"); len(got) != 2 ||
		got[1] != filepath.FromSlash("/Applications/Llamatray.app/Contents/Resources/llama-server") {
		t.Errorf("macOS roots = %v", got)
	}
	// The release workflow would run the same install into the bundle's folder.
	if _, err := newInstaller(s, roots[0]).Install(context.Background(), Request{Build: "b7100"}, nil); err != nil {
		t.Fatal(err)
	}
	b, ok := Store{Root: roots[0]}.Current()
	if !ok || b.Build != "b7100" {
		t.Fatalf("bundled current = %+v %v", b, ok)
	}
}

func TestUpdate(t *testing.T) {
	s := standIn(t)
	in := newInstaller(s, t.TempDir())
	ctx := context.Background()
	// With nothing installed, an update installs the latest.
	b, err := in.Install(ctx, Request{Build: Latest, Update: true}, nil)
	if err != nil || b.Build != "b7100" {
		t.Fatalf("first update: %+v %v", b, err)
	}
	var msg string
	n := s.Downloads()
	if b, err := in.Install(ctx, Request{Build: Latest, Update: true}, func(p Progress) { msg = p.Message }); err != nil || b.Build != "b7100" ||
		!strings.Contains(msg, "up to date") || s.Downloads() != n {
		t.Fatalf("update at the latest: %+v %v %q", b, err, msg)
	}
	// An older build in use with the CPU backend asked for: the update keeps asking for it.
	if _, err := in.Install(ctx, Request{Build: "b6000", Backend: "cpu"}, nil); err != nil {
		t.Fatal(err)
	}
	if cur, _ := in.Store.Current(); cur.Build != "b6000" || cur.Asked != "cpu" {
		t.Fatalf("current = %+v", cur)
	}
	_, tgz := fakeArchives(t)
	s.Add("b7200", map[string][]byte{ghreleases.AssetName("b7200", ".tar.gz"): tgz})
	b, err = in.Install(ctx, Request{Build: Latest, Update: true}, nil)
	if err != nil || b.Build != "b7200" || b.Asked != "cpu" {
		t.Fatalf("update: %+v %v", b, err)
	}
	for _, c := range []struct {
		tag, cur string
		want     bool
	}{{"b7200", "b7100", true}, {"b7100", "b7100", false}, {"b900", "b7100", false}, {"nightly", "b7100", true}} {
		if Newer(c.tag, c.cur) != c.want {
			t.Errorf("Newer(%s, %s) != %v", c.tag, c.cur, c.want)
		}
	}
}

func TestOneChangeAtATime(t *testing.T) {
	s := standIn(t)
	in := newInstaller(s, t.TempDir())
	in.busy.Store(true) // an install is running
	if _, err := in.Install(context.Background(), Request{}, nil); !errors.Is(err, ErrBusy) {
		t.Errorf("install during an install: %v", err)
	}
	if _, err := in.Use("b7100"); !errors.Is(err, ErrBusy) {
		t.Errorf("use during an install: %v", err)
	}
	if s.Downloads() != 0 {
		t.Errorf("%d downloads", s.Downloads())
	}
}
