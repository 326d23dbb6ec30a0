package releases

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/llamatray/llamatray/router/download"
)

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

// fetchAsset downloads a into a new file in dir with the one downloader (router/download), reporting
// progress, and checks its sha256. On any failure the partial file is removed: an install starts
// again from nothing. It returns the file's path.
//
// The asset's listed size bounds the download: an asset listed with no size is refused, and one that
// sends more than its size is cut there (ErrTooLarge). A download that sends nothing for stall (its
// answer's headers included) is cut with ErrCut.
func fetchAsset(ctx context.Context, hc *http.Client, a Asset, dir string, stall time.Duration, progress func(done, total int64, rate float64, left time.Duration)) (string, error) {
	want := a.SHA256()
	if want == "" {
		return "", fmt.Errorf("%s: %w; refusing to install an unverified build", a.Name, ErrNoDigest)
	}
	total := a.Size
	if total <= 0 {
		return "", fmt.Errorf("%s: the release lists its size as %d bytes; refusing a download of unknown size", a.Name, total)
	}
	f, err := os.CreateTemp(dir, ".download-*-"+filepath.Base(a.Name))
	if err != nil {
		return "", download.DiskFull(err, dir)
	}
	path := f.Name()
	fail := func(err error) (string, error) {
		f.Close()
		os.Remove(path)
		return "", err
	}
	h := sha256.New()
	var (
		done  int64
		last  time.Time
		speed download.Speed
	)
	src := download.Source{
		Request: func(ctx context.Context) (*http.Request, error) {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.DownloadURL, nil)
			if err != nil {
				return nil, err
			}
			req.Header.Set("Accept", "application/octet-stream")
			return req, nil
		},
		Client: hc,
		Size:   total,
		Stall:  stall,
	}
	_, err = download.Fill(ctx, src, io.MultiWriter(f, h), 0, func(n int64) {
		done += n
		if now := time.Now(); progress != nil && now.Sub(last) >= 100*time.Millisecond {
			last = now
			rate, left := speed.At(now, done, total)
			progress(done, total, rate, left)
		}
	})
	if err != nil {
		if download.IsDiskFull(err) {
			err = download.DiskFull(err, path)
		}
		return fail(fmt.Errorf("downloading %s: %w", a.Name, err))
	}
	if progress != nil {
		progress(done, total, 0, 0)
	}
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
