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
	"runtime"
	"syscall"
	"time"

	"github.com/shirou/gopsutil/v4/disk"

	"github.com/llamatray/llamatray/router/config"
)

// ErrDigest is matched by the error of an install whose download does not match the published sha256.
var ErrDigest = errors.New("sha256 mismatch")

// ErrNoDigest is matched when the release publishes no sha256 digest for the asset.
var ErrNoDigest = errors.New("no published sha256 digest")

// ErrDiskFull is matched when there is not enough free disk space, found before or during the install.
var ErrDiskFull = errors.New("not enough free disk space")

// ErrCut is matched when the download ended before the whole file came.
var ErrCut = errors.New("download cut")

// DefaultStallTimeout is how long a download may send nothing before it is cut (Installer.StallTimeout).
const DefaultStallTimeout = 60 * time.Second

// stallText says a stall timeout as a person would: "60 s", "1.5 s", "200ms".
func stallText(d time.Duration) string {
	if d >= time.Second {
		return fmt.Sprintf("%g s", d.Seconds())
	}
	return d.String()
}

// unpackFactor is how much space an install needs per byte of archive: the archive itself while it is
// unpacked, and the unpacked files (llama.cpp's archives unpack to about twice their size).
const unpackFactor = 4

// checkSpace refuses when dir's file system has less than need bytes free.
func checkSpace(dir string, need int64) error {
	u, err := disk.Usage(dir)
	if err != nil {
		return nil // unknown: the writes will tell
	}
	if int64(u.Free) < need {
		return fmt.Errorf("%w in %s: %s free, about %s needed", ErrDiskFull, dir, config.HumanSize(int64(u.Free)), config.HumanSize(need))
	}
	return nil
}

// isDiskFull reports whether err is the operating system saying the disk is full.
func isDiskFull(err error) bool {
	var e syscall.Errno
	if !errors.As(err, &e) {
		return false
	}
	if runtime.GOOS == "windows" {
		return e == 39 || e == 112 // ERROR_HANDLE_DISK_FULL, ERROR_DISK_FULL
	}
	return e == syscall.ENOSPC || e == syscall.EDQUOT
}

// diskFull wraps a write error so that a full disk reads as ErrDiskFull.
func diskFull(err error, what string) error {
	if isDiskFull(err) {
		return fmt.Errorf("%w: writing %s: %w", ErrDiskFull, what, err)
	}
	return fmt.Errorf("writing %s: %w", what, err)
}

// download fetches a into a new file in dir, reporting progress, and checks its size and sha256. On
// any failure the partial file is removed. It returns the file's path.
//
// The asset's listed size bounds the download: an asset listed with no size is refused, and one that
// sends more than its size is cut there. A download that sends nothing for stall (its answer's
// headers included) is cut with ErrCut.
func download(ctx context.Context, hc *http.Client, a Asset, dir string, stall time.Duration, progress func(done, total int64)) (string, error) {
	want := a.SHA256()
	if want == "" {
		return "", fmt.Errorf("%s: %w; refusing to install an unverified build", a.Name, ErrNoDigest)
	}
	total := a.Size
	if total <= 0 {
		return "", fmt.Errorf("%s: the release lists its size as %d bytes; refusing a download of unknown size", a.Name, total)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var done int64
	errStalled := fmt.Errorf("%w: %s: no data for %s", ErrCut, a.Name, stallText(stall))
	// The timer runs while the download waits: for the answer, then in each read.
	timer := time.AfterFunc(stall, func() { cancel(errStalled) })
	defer timer.Stop()
	why := func(err error) error {
		if context.Cause(ctx) == errStalled {
			return fmt.Errorf("%w after %s of %s", errStalled, config.HumanSize(done), config.HumanSize(total))
		}
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.DownloadURL, nil)
	if err != nil {
		return "", fmt.Errorf("downloading %s: %w", a.Name, err)
	}
	req.Header.Set("Accept", "application/octet-stream")
	resp, err := hc.Do(req)
	timer.Stop()
	if err != nil {
		return "", why(fmt.Errorf("downloading %s: %w", a.Name, err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("downloading %s: HTTP %d from %s", a.Name, resp.StatusCode, a.DownloadURL)
	}
	if resp.ContentLength > total {
		return "", fmt.Errorf("downloading %s: %w: the server sends %s, the release lists %s; nothing was kept", a.Name, ErrTooLarge,
			config.HumanSize(resp.ContentLength), config.HumanSize(total))
	}
	f, err := os.CreateTemp(dir, ".download-*-"+filepath.Base(a.Name))
	if err != nil {
		return "", diskFull(err, dir)
	}
	path := f.Name()
	fail := func(err error) (string, error) {
		f.Close()
		os.Remove(path)
		return "", err
	}
	h := sha256.New()
	last := time.Time{}
	buf := make([]byte, 256<<10)
	body := io.LimitReader(resp.Body, total+1) // one byte more than listed tells it is too large
	for {
		timer.Reset(stall)
		n, rerr := body.Read(buf)
		timer.Stop()
		if n > 0 {
			if done+int64(n) > total {
				return fail(fmt.Errorf("downloading %s: %w: more than the %s the release lists came; the download was deleted", a.Name, ErrTooLarge, config.HumanSize(total)))
			}
			if _, err := f.Write(buf[:n]); err != nil {
				return fail(diskFull(err, path))
			}
			h.Write(buf[:n])
			done += int64(n)
			if now := time.Now(); progress != nil && now.Sub(last) >= 100*time.Millisecond {
				last = now
				progress(done, total)
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			if context.Cause(ctx) == errStalled {
				return fail(why(rerr))
			}
			if ctx.Err() != nil {
				return fail(fmt.Errorf("downloading %s: %w", a.Name, ctx.Err()))
			}
			return fail(fmt.Errorf("%w: %s stopped after %s of %s: %w", ErrCut, a.Name, config.HumanSize(done), config.HumanSize(total), rerr))
		}
	}
	if done != total {
		return fail(fmt.Errorf("%w: %s stopped after %s of %s", ErrCut, a.Name, config.HumanSize(done), config.HumanSize(total)))
	}
	if progress != nil {
		progress(done, total)
	}
	if err := f.Close(); err != nil {
		os.Remove(path)
		return "", diskFull(err, path)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		os.Remove(path)
		return "", fmt.Errorf("%w: %s has sha256 %s, the release publishes %s; the download was deleted", ErrDigest, a.Name, got, want)
	}
	return path, nil
}
