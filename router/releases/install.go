package releases

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/llamatray/llamatray/router/download"
)

// Request is what to install: the JSON body of POST /api/llama-server/install.
type Request struct {
	Build   string `json:"build"`             // a tag such as "b7100", or "latest" ("" = latest)
	Backend string `json:"backend,omitempty"` // cpu, cuda, vulkan, rocm, hip, metal ("" = choose)
	Asset   string `json:"asset,omitempty"`   // an exact asset name
	// Update installs only a build newer than the one in use, with the backend that one was asked
	// with; otherwise it reports the build in use as up to date.
	Update bool `json:"update,omitempty"`
}

// Progress phases.
const (
	PhaseChosen      = "chosen"      // the build and archive are known (Reason says why)
	PhaseDownloading = "downloading" // Done of Total bytes
	PhaseVerified    = "verified"    // the sha256 matched
	PhaseUnpacking   = "unpacking"
	PhaseDone        = "done" // installed and in use
)

// Progress is one step of an install, the data of each progress event of the API.
type Progress struct {
	Phase   string `json:"phase"`
	Build   string `json:"build,omitempty"`
	Asset   string `json:"asset,omitempty"`
	Backend string `json:"backend,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Done    int64  `json:"done,omitempty"`
	Total   int64  `json:"total,omitempty"`
	// BytesPerSecond and ETASeconds are the download's speed over its last seconds and the time
	// left at it; 0 when not known yet.
	BytesPerSecond float64 `json:"bytes_per_second,omitempty"`
	ETASeconds     float64 `json:"eta_seconds,omitempty"`
	Message        string  `json:"message,omitempty"`
}

// ErrBusy is matched when another install or switch is running.
var ErrBusy = errors.New("another llama-server install is running")

// ErrInUse is matched when a build cannot be replaced because a model runs on it.
var ErrInUse = errors.New("the build is in use by a running model")

// Installer installs builds into a Store. One change (Install, Use) runs at a time.
type Installer struct {
	Client *Client
	Store  Store
	// HTTP downloads the archives; nil → a client without an overall timeout (cancel with the context).
	HTTP *http.Client
	// System describes this machine; nil → Detect.
	System func(context.Context) System
	// InUse reports whether a running llama-server was started from a file under dir; nil → never.
	InUse func(dir string) bool
	// Verify runs the unpacked llama-server (`--version`) and returns its version; nil → no check.
	Verify func(ctx context.Context, path string) (string, error)
	Logger *slog.Logger
	// StallTimeout cuts a download that sends no byte for that long (waiting for its answer too);
	// 0 → DefaultStallTimeout (60 s).
	StallTimeout time.Duration
	// MaxUnpacked is the most one archive may unpack to; 0 → DefaultMaxUnpacked (8 GiB). An archive
	// may also unpack to no more than UnpackRatio times its size (0 → DefaultUnpackRatio, 200; at
	// least 64 MiB), nor to more than the store's free space less 256 MiB.
	MaxUnpacked int64
	UnpackRatio int64

	busy     atomic.Bool                    // one Install or Use at a time
	diskFree func(dir string) (int64, bool) // the free space of dir's file system (tests); nil → the disk's
}

func (in *Installer) log() *slog.Logger { return cmp.Or(in.Logger, slog.New(slog.DiscardHandler)) }

func (in *Installer) inUse(dir string) bool { return in.InUse != nil && in.InUse(dir) }

// Plan fetches the release and picks its archive, downloading nothing.
func (in *Installer) Plan(ctx context.Context, req Request) (Release, Choice, error) {
	rel, err := in.Client.Get(ctx, req.Build)
	if err != nil {
		return rel, Choice{}, err
	}
	detect := Detect
	if in.System != nil {
		detect = in.System
	}
	c, err := Pick(rel.Assets, detect(ctx), Want{Backend: req.Backend, Asset: req.Asset})
	if err != nil {
		return rel, c, fmt.Errorf("llama.cpp %s: %w", rel.TagName, err)
	}
	return rel, c, nil
}

// Install downloads, verifies and unpacks the requested build and makes it the one in use (the
// one before it stays for a rollback; older ones are removed unless a model runs on them). A running
// child keeps the file it was started from: only new loads use the new build. On failure nothing of
// the attempt is left on disk. progress is called on the caller's goroutine.
func (in *Installer) Install(ctx context.Context, req Request, progress func(Progress)) (Build, error) {
	if !in.busy.CompareAndSwap(false, true) {
		return Build{}, ErrBusy
	}
	defer in.busy.Store(false)
	if progress == nil {
		progress = func(Progress) {}
	}
	cur, hasCur := in.Store.Current()
	if req.Update && hasCur && req.Backend == "" && req.Asset == "" {
		req.Backend = cur.Asked
	}
	rel, c, err := in.Plan(ctx, req)
	if err != nil {
		return Build{}, err
	}
	tag := rel.TagName
	if !validTag(tag) {
		return Build{}, fmt.Errorf("llama.cpp release tag %q: %w (b and a number, such as b7100); nothing was installed", tag, ErrBadTag)
	}
	if req.Update && hasCur && !Newer(tag, cur.Build) {
		progress(Progress{Phase: PhaseDone, Build: cur.Build, Asset: cur.Asset, Backend: cur.Backend, Message: "up to date: " + tag + " is the latest release"})
		return cur, nil
	}
	assets := append([]Asset{c.Asset}, c.Extras...)
	var total int64
	for _, a := range assets {
		total += a.Size
	}
	progress(Progress{Phase: PhaseChosen, Build: tag, Asset: c.Asset.Name, Backend: c.Label(), Reason: c.Reason, Total: total})
	in.log().Info("llama-server build chosen", "build", tag, "asset", c.Asset.Name, "reason", c.Reason)

	if b, err := in.Store.Get(tag); err == nil && b.Asset == c.Asset.Name && b.SHA256 == c.Asset.SHA256() {
		if _, err := in.Store.use(tag); err != nil {
			return Build{}, err
		}
		b.Current = true
		progress(Progress{Phase: PhaseDone, Build: tag, Asset: b.Asset, Backend: b.Backend, Message: "already installed; now in use"})
		return b, nil
	}
	b, err := in.put(ctx, tag, c, assets, total, req.Backend, progress)
	if err != nil {
		return Build{}, err
	}
	in.log().Info("llama-server installed", "build", tag, "path", b.Path, "version", b.Version)
	progress(Progress{Phase: PhaseDone, Build: tag, Asset: b.Asset, Backend: b.Backend, Message: "installed; now in use"})
	return b, nil
}

// put downloads and unpacks build tag's assets into a staging folder of the store, moves it to
// the build's folder and makes it the build in use. A build folder a running model uses is not
// replaced.
func (in *Installer) put(ctx context.Context, tag string, c Choice, assets []Asset, total int64, asked string, progress func(Progress)) (Build, error) {
	dst := in.Store.Dir(tag)
	if _, err := os.Stat(dst); err == nil && in.inUse(dst) {
		return Build{}, fmt.Errorf("cannot replace llama.cpp %s: %w; unload its models first, or install another build", tag, ErrInUse)
	}
	if err := os.MkdirAll(in.Store.Root, 0o755); err != nil {
		return Build{}, download.DiskFull(err, in.Store.Root)
	}
	in.sweep()
	if err := download.CheckSpace(in.Store.Root, total*unpackFactor); err != nil {
		return Build{}, err
	}
	staging, err := os.MkdirTemp(in.Store.Root, ".staging-"+tag+"-")
	if err != nil {
		return Build{}, download.DiskFull(err, in.Store.Root)
	}
	defer os.RemoveAll(staging) // empty after the rename when all went well

	if err := in.fetch(ctx, tag, c, assets, total, staging, asked, progress); err != nil {
		return Build{}, err
	}
	if err := in.swap(staging, dst); err != nil {
		return Build{}, err
	}
	if _, err := in.Store.use(tag); err != nil {
		return Build{}, err
	}
	in.prune()
	return in.Store.Get(tag)
}

// fetch downloads and unpacks every archive into staging and writes the manifest there.
func (in *Installer) fetch(ctx context.Context, tag string, c Choice, assets []Asset, total int64, staging, asked string, progress func(Progress)) error {
	hc := cmp.Or(in.HTTP, &http.Client{})
	stall := cmp.Or(max(in.StallTimeout, 0), DefaultStallTimeout)
	var before int64
	b := Build{Build: tag, Asset: c.Asset.Name, SHA256: c.Asset.SHA256(), Backend: c.Label(), Asked: asked, Reason: c.Reason, InstalledAt: time.Now().UTC()}
	for _, a := range assets {
		file, err := fetchAsset(ctx, hc, a, in.Store.Root, stall, func(done int64, rate float64, left time.Duration) {
			progress(Progress{Phase: PhaseDownloading, Build: tag, Asset: a.Name, Done: before + done, Total: total,
				BytesPerSecond: rate, ETASeconds: left.Seconds()})
		})
		if err != nil {
			return err
		}
		before += a.Size
		progress(Progress{Phase: PhaseVerified, Build: tag, Asset: a.Name, Message: "sha256 " + a.SHA256()})
		progress(Progress{Phase: PhaseUnpacking, Build: tag, Asset: a.Name})
		err = unpack(file, a.Name, staging, in.unpackLimit(a.Size))
		os.Remove(file)
		if err != nil {
			return fmt.Errorf("unpacking %s: %w", a.Name, err)
		}
		if a.Name != c.Asset.Name {
			b.Extras = append(b.Extras, a.Name)
		}
	}
	rel, err := findBinary(staging, BinaryName())
	if err != nil {
		return fmt.Errorf("llama.cpp %s (%s): %w", tag, c.Asset.Name, err)
	}
	bin := filepath.Join(staging, rel)
	if err := chmodInside(staging, rel, 0o755); err != nil {
		return fmt.Errorf("marking %s executable: %w", bin, err)
	}
	clearQuarantine(ctx, staging, in.log())
	if in.Verify != nil {
		v, err := in.Verify(ctx, bin)
		if err != nil {
			return fmt.Errorf("the llama-server of llama.cpp %s (%s) does not run on this machine: %w", tag, c.Asset.Name, err)
		}
		b.Version = v
	}
	b.Binary = filepath.ToSlash(rel)
	return writeJSON(filepath.Join(staging, manifestFile), b)
}

// clearQuarantine removes macOS's quarantine attribute from everything under dir, so Gatekeeper does
// not stop the unpacked llama-server and its libraries. Other systems have none.
func clearQuarantine(ctx context.Context, dir string, log *slog.Logger) {
	if runtime.GOOS != "darwin" {
		return
	}
	if out, err := exec.CommandContext(ctx, "xattr", "-r", "-d", "com.apple.quarantine", dir).CombinedOutput(); err != nil {
		// xattr fails when no file has the attribute, which is the usual case for our own downloads.
		log.Debug("xattr -r -d com.apple.quarantine", "dir", dir, "err", err, "output", string(out))
	}
}

// swap puts the unpacked staging folder in place of dst, removing an older copy of the same build.
func (in *Installer) swap(staging, dst string) error {
	old := ""
	if _, err := os.Stat(dst); err == nil {
		if old, err = os.MkdirTemp(in.Store.Root, "."+filepath.Base(dst)+"-old-"); err != nil {
			return download.DiskFull(err, in.Store.Root)
		}
		os.Remove(old)
		if err := os.Rename(dst, old); err != nil {
			return fmt.Errorf("moving the old %s aside: %w", dst, err)
		}
	}
	if err := os.Rename(staging, dst); err != nil {
		if old != "" {
			os.Rename(old, dst)
		}
		return fmt.Errorf("installing %s: %w", dst, err)
	}
	if old != "" {
		os.RemoveAll(old)
	}
	return nil
}

// sweep removes what an interrupted earlier install left (files and folders starting with ".").
func (in *Installer) sweep() {
	ents, _ := os.ReadDir(in.Store.Root)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			os.RemoveAll(filepath.Join(in.Store.Root, e.Name()))
		}
	}
}

// prune removes the builds other than the current and the previous one, except those in use.
func (in *Installer) prune() {
	st, err := in.Store.State()
	if err != nil {
		return
	}
	builds, _ := in.Store.Builds()
	for _, b := range builds {
		dir := in.Store.Dir(b.Build)
		if b.Build == st.Current || b.Build == st.Previous || in.inUse(dir) {
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			in.log().Warn("could not remove an old llama-server build", "build", b.Build, "err", err)
		}
	}
}

// Use makes an installed build the one new loads use ("previous" rolls back to the one before).
func (in *Installer) Use(build string) (Build, error) {
	if !in.busy.CompareAndSwap(false, true) {
		return Build{}, ErrBusy
	}
	defer in.busy.Store(false)
	if build == "previous" {
		st, err := in.Store.State()
		if err != nil {
			return Build{}, err
		}
		if st.Previous == "" {
			return Build{}, errors.New("there is no previous llama-server build to go back to")
		}
		build = st.Previous
	}
	b, err := in.Store.Get(build)
	if err != nil {
		return Build{}, err
	}
	if _, err := in.Store.use(build); err != nil {
		return Build{}, err
	}
	b.Current = true
	return b, nil
}

// Newer reports whether tag is a later llama.cpp build than cur: "b7200" is newer than "b7100".
// Tags that are not build numbers are newer when they differ.
func Newer(tag, cur string) bool {
	t, err1 := strconv.Atoi(strings.TrimPrefix(tag, "b"))
	c, err2 := strconv.Atoi(strings.TrimPrefix(cur, "b"))
	if err1 != nil || err2 != nil {
		return tag != cur
	}
	return t > c
}

// ErrDigest is matched by the error of an install whose download does not match the published sha256.
var ErrDigest = errors.New("sha256 mismatch")

// ErrNoDigest is matched when the release publishes no sha256 digest for the asset.
var ErrNoDigest = errors.New("no published sha256 digest")

// ErrDiskFull is matched when there is not enough free disk space, found before or during the install.
var ErrDiskFull = download.ErrDiskFull

// ErrCut is matched when the download ended before the whole file came.
var ErrCut = download.ErrCut

// DefaultStallTimeout is how long a download may send nothing before it is cut (Installer.StallTimeout).
const DefaultStallTimeout = download.DefaultStall

// unpackFactor is how much space an install needs per byte of archive: the archive itself while it is
// unpacked, and the unpacked files (llama.cpp's archives unpack to about twice their size).
const unpackFactor = 4

// fetchAsset downloads a into a new file in dir with the one downloader (router/download), calling
// progress at most every 100 ms as it goes and once when it is whole, and checks its sha256. On any
// failure the partial file is removed: an install starts again from nothing. It returns the file's
// path.
//
// The asset's listed size bounds the download: an asset listed with no size is refused, and one that
// sends more than its size is cut there (ErrTooLarge). A download that sends nothing for stall (its
// answer's headers included) is cut with ErrCut.
func fetchAsset(ctx context.Context, hc *http.Client, a Asset, dir string, stall time.Duration, progress func(done int64, rate float64, left time.Duration)) (string, error) {
	want := a.SHA256()
	if want == "" {
		return "", fmt.Errorf("%s: %w; refusing to install an unverified build", a.Name, ErrNoDigest)
	}
	if a.Size <= 0 {
		return "", fmt.Errorf("%s: the release lists its size as %d bytes; refusing a download of unknown size", a.Name, a.Size)
	}
	f, err := os.CreateTemp(dir, ".download-*-"+filepath.Base(a.Name))
	if err != nil {
		return "", download.DiskFull(err, dir)
	}
	path := f.Name()
	h := sha256.New()
	var (
		done  int64
		last  time.Time
		speed download.Speed
	)
	src := download.Source{
		Request: func(ctx context.Context) (*http.Request, error) {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.DownloadURL, nil)
			if err == nil {
				req.Header.Set("Accept", "application/octet-stream")
			}
			return req, err
		},
		Client: hc,
		Size:   a.Size,
		Stall:  stall,
	}
	_, err = download.Fill(ctx, src, io.MultiWriter(f, h), 0, func(n int64) {
		done += n
		if now := time.Now(); now.Sub(last) >= 100*time.Millisecond {
			last = now
			rate, left := speed.At(now, done, a.Size)
			progress(done, rate, left)
		}
	})
	if err != nil {
		f.Close()
		os.Remove(path)
		if download.IsDiskFull(err) {
			err = download.DiskFull(err, path)
		}
		return "", fmt.Errorf("downloading %s: %w", a.Name, err)
	}
	progress(done, 0, 0)
	if err := f.Close(); err != nil {
		os.Remove(path)
		return "", download.DiskFull(err, path)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		os.Remove(path)
		return "", fmt.Errorf("%w: %s has sha256 %s, the release publishes %s; the download was deleted", ErrDigest, a.Name, got, want)
	}
	return path, nil
}
