// Package download is the one downloader behind the Hub's model pulls and the llama-server
// installs: it brings one file over HTTP into a file open for writing, resumed after cuts with
// range requests (skipping what an answer that ignores the range sends again), bounded by the
// file's listed size, cut when nothing comes for a while, retried with a bound, counted for
// progress (Speed), and it owns the free-space check and the full-disk errors. What to do with
// the bytes (verify, rename, link, unpack) stays with its callers.
package download

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/llamatray/llamatray/router/config"
)

// ErrCut is matched by the error of a download that ended before the whole file came: the
// connection cut, the server sent less than it listed, or nothing came for the stall timeout.
var ErrCut = errors.New("download cut")

// ErrTooLarge is matched when a server sends, or says it will send, more than the file's listed size.
var ErrTooLarge = errors.New("too large")

// Defaults of a Source's bounds.
const (
	DefaultStall     = 60 * time.Second       // no byte for this long cuts an attempt
	DefaultMaxStalls = 5                      // attempts in a row that bring nothing before giving up
	DefaultBackoff   = 500 * time.Millisecond // the pause after the k-th such attempt is k times this
)

// Source is one file to download and the rules of its download.
type Source struct {
	// Request builds one attempt's GET; Fill adds the Range header.
	Request func(ctx context.Context) (*http.Request, error)
	Client  *http.Client // nil: http.DefaultClient
	// Refuse is the error of an answer other than 200 and 206, in the server's own words; such an
	// error ends the download without another attempt. nil: "HTTP N from URL".
	Refuse func(*http.Response) error
	Size   int64         // the listed size: Fill writes no byte past it, and more is ErrTooLarge
	Stall  time.Duration // an attempt that brings no byte (its answer's headers included) for this long is cut; 0: DefaultStall
	// Attempts bounds the attempts in all; 0 or 1: one, so a cut is not resumed (the caller
	// starts again from nothing). MaxStalls bounds the attempts in a row that bring no byte.
	Attempts  int
	MaxStalls int           // 0: DefaultMaxStalls
	Backoff   time.Duration // 0: DefaultBackoff
}

// StallError is the error of an attempt that brought nothing for After; it matches ErrCut.
type StallError struct {
	After       time.Duration
	Done, Total int64
}

func (e *StallError) Error() string {
	return fmt.Sprintf("no data for %s after %s of %s", stallText(e.After), config.HumanSize(e.Done), config.HumanSize(e.Total))
}

func (e *StallError) Is(target error) bool { return target == ErrCut }

// GaveUpError is the error of a download that was retried Tries times and still is not whole;
// Done bytes of it were written. It matches ErrCut, and Err is the last attempt's error.
type GaveUpError struct {
	Tries       int
	Done, Total int64
	Err         error
}

func (e *GaveUpError) Error() string {
	return fmt.Sprintf("download failed after %d tries (%s of %s came): %v", e.Tries, config.HumanSize(e.Done), config.HumanSize(e.Total), e.Err)
}

func (e *GaveUpError) Unwrap() []error { return []error{ErrCut, e.Err} }

// refusal marks an error that ends the download without another attempt.
type refusal struct{ err error }

func (r refusal) Error() string { return r.err.Error() }
func (r refusal) Unwrap() error { return r.err }

// stallText says a stall timeout as a person would: "60 s", "1.5 s", "200ms".
func stallText(d time.Duration) string {
	if d >= time.Second {
		return fmt.Sprintf("%g s", d.Seconds())
	}
	return d.String()
}

// Fill writes the file from byte off to w until w holds src.Size bytes and returns the bytes it
// wrote. counted, if not nil, is called after every write with its length. Each attempt after a
// cut asks for the rest with a Range request; an answer that ignores the range has its first off
// bytes skipped. Errors: the server's refusal (Refuse), ErrTooLarge, a write error as it came
// (wrap it with DiskFull), ctx's error, or — once the attempts are spent — the cut (a *StallError
// or io.ErrUnexpectedEOF, matching ErrCut; a *GaveUpError when there were retries).
func Fill(ctx context.Context, src Source, w io.Writer, off int64, counted func(int64)) (int64, error) {
	if src.Size <= 0 {
		return 0, fmt.Errorf("the listed size is %d bytes; refusing a download of unknown size", src.Size)
	}
	maxStalls, backoff := positive(src.MaxStalls, DefaultMaxStalls), positive(src.Backoff, DefaultBackoff)
	var wrote int64
	stalls := 0
	for attempt := 1; off+wrote < src.Size; attempt++ {
		n, err := fetch(ctx, src, w, off+wrote, counted)
		wrote += n
		if err == nil {
			continue
		}
		var r refusal
		if ctx.Err() != nil {
			return wrote, ctx.Err()
		}
		if errors.As(err, &r) || src.Attempts <= 1 { // refused, or no retries: as it came
			return wrote, err
		}
		if n > 0 {
			stalls = 0
		} else {
			stalls++
		}
		if stalls >= maxStalls || attempt >= src.Attempts {
			return wrote, &GaveUpError{Tries: attempt, Done: off + wrote, Total: src.Size, Err: err}
		}
		t := time.NewTimer(time.Duration(stalls) * backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return wrote, ctx.Err()
		case <-t.C:
		}
	}
	return wrote, nil
}

// positive is v, or def when v is 0 or less.
func positive[T int | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// fetch is one attempt: a request from byte off, what arrives appended to w up to the listed size.
// It returns the bytes written; nil only once the file is whole.
func fetch(ctx context.Context, src Source, w io.Writer, off int64, counted func(int64)) (int64, error) {
	stallAfter := positive(src.Stall, DefaultStall)
	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var n int64
	errStalled := errors.New("stalled")
	stall := time.AfterFunc(stallAfter, func() { cancel(errStalled) }) // also bounds the wait for headers
	defer stall.Stop()
	stalled := func(err error) error {
		if context.Cause(rctx) == errStalled && ctx.Err() == nil {
			return &StallError{After: stallAfter, Done: off + n, Total: src.Size}
		}
		return err
	}
	req, err := src.Request(rctx)
	if err != nil {
		return 0, refusal{err}
	}
	if off > 0 {
		req.Header.Set("Range", "bytes="+strconv.FormatInt(off, 10)+"-")
	}
	resp, err := cmp.Or(src.Client, http.DefaultClient).Do(req)
	if err != nil {
		return 0, stalled(err)
	}
	defer resp.Body.Close()
	skip, err := src.answer(req, resp, off)
	if err != nil {
		return 0, err
	}
	buf := make([]byte, 256<<10)
	for {
		k, rerr := resp.Body.Read(buf)
		stall.Reset(stallAfter)
		b := buf[:k]
		if skip > 0 {
			drop := min(skip, int64(len(b)))
			skip -= drop
			b = b[drop:]
		}
		if err := src.write(w, b, off+n, counted); err != nil {
			return n, err
		}
		n += int64(len(b))
		if rerr != nil {
			return n, src.ended(off+n, rerr, stalled)
		}
	}
}

// write appends b, the file's bytes from byte at, to w. More than the listed size is refused, and
// so is a write error: the caller's disk, not the network, so no retry.
func (src Source) write(w io.Writer, b []byte, at int64, counted func(int64)) error {
	if int64(len(b)) > src.Size-at {
		return refusal{fmt.Errorf("%w: more than the %s listed came", ErrTooLarge, config.HumanSize(src.Size))}
	}
	if len(b) == 0 {
		return nil
	}
	if _, err := w.Write(b); err != nil {
		return refusal{err}
	}
	if counted != nil {
		counted(int64(len(b)))
	}
	return nil
}

// ended is the error of an answer whose body ended with rerr (io.EOF or another) at byte at: nil
// when the file is whole (a server may fail to end its answer cleanly), else the cut, a
// *StallError when the stall timer cut it.
func (src Source) ended(at int64, rerr error, stalled func(error) error) error {
	switch {
	case at == src.Size:
		return nil
	case rerr == io.EOF:
		return fmt.Errorf("%w: it stopped after %s of %s: %w", ErrCut, config.HumanSize(at), config.HumanSize(src.Size), io.ErrUnexpectedEOF)
	}
	if err := stalled(nil); err != nil {
		return err
	}
	return fmt.Errorf("%w: it stopped after %s of %s: %w", ErrCut, config.HumanSize(at), config.HumanSize(src.Size), rerr)
}

// answer checks the answer to an attempt's request from byte off, and returns how many bytes of
// its body come before byte off (all off when the server ignored the range, else none).
func (src Source) answer(req *http.Request, resp *http.Response, off int64) (skip int64, err error) {
	switch {
	case resp.StatusCode == http.StatusPartialContent && off > 0:
		if want := "bytes " + strconv.FormatInt(off, 10) + "-"; !strings.HasPrefix(resp.Header.Get("Content-Range"), want) {
			return 0, fmt.Errorf("%w: asked from byte %d, the server answered with the range %q", ErrCut, off, resp.Header.Get("Content-Range"))
		}
	case resp.StatusCode == http.StatusOK:
		skip = off // the range was ignored: the file comes from its start
	case resp.StatusCode == http.StatusRequestedRangeNotSatisfiable:
		return 0, refusal{fmt.Errorf("the server has fewer than the %s it listed (HTTP 416 from byte %d)", config.HumanSize(src.Size), off)}
	case src.Refuse != nil:
		return 0, refusal{src.Refuse(resp)}
	default:
		return 0, refusal{fmt.Errorf("HTTP %d from %s", resp.StatusCode, req.URL.Redacted())}
	}
	if cl := resp.ContentLength; cl > src.Size-off+skip {
		return 0, refusal{fmt.Errorf("%w: the server sends %s, more than the %s listed; nothing of it was kept", ErrTooLarge,
			config.HumanSize(cl+off-skip), config.HumanSize(src.Size))}
	}
	return skip, nil
}

// Speed measures a download's rate over its last seconds and the time left at that rate. It is a
// plain value: its one user calls At from one goroutine at a time.
type Speed struct {
	samples []sample
}

type sample struct {
	at    time.Time
	bytes int64
}

// speedWindow is how far back the rate looks.
const speedWindow = 5 * time.Second

// Found counts n bytes into done that did not come over the network (a partial file resumed, a
// file already complete): the rate leaves them out, as if they had been there from the start.
func (s *Speed) Found(n int64) {
	for i := range s.samples {
		s.samples[i].bytes += n
	}
}

// At records that done of total bytes came by now and returns the rate in bytes per second over
// the last seconds and the time left at it (0 when unknown).
func (s *Speed) At(now time.Time, done, total int64) (rate float64, left time.Duration) {
	s.samples = append(s.samples, sample{now, done})
	for len(s.samples) > 2 && now.Sub(s.samples[0].at) > speedWindow {
		s.samples = s.samples[1:]
	}
	first := s.samples[0]
	if dt := now.Sub(first.at).Seconds(); dt > 0.05 {
		rate = float64(done-first.bytes) / dt
	}
	if rate > 0 && total > done {
		left = time.Duration(float64(total-done) / rate * float64(time.Second))
	}
	return rate, left
}

// ErrDiskFull is matched by the error of a download the disk cannot hold, found before it starts
// (CheckSpace) or while it writes (DiskFull).
var ErrDiskFull = errors.New("not enough free disk space")

// SpaceError says a download needs more than the disk has free; it matches ErrDiskFull.
type SpaceError struct {
	Dir        string
	Need, Free int64
}

func (e *SpaceError) Error() string {
	return fmt.Sprintf("not enough free disk space in %s: %s free, about %s needed", e.Dir, config.HumanSize(e.Free), config.HumanSize(e.Need))
}

func (e *SpaceError) Is(target error) bool { return target == ErrDiskFull }

// Free is the space the user may still write on the file system that holds dir, or would hold it
// (the nearest folder above it that exists); false when it cannot be told.
func Free(dir string) (int64, bool) {
	for { // the nearest folder that exists
		if _, err := os.Stat(dir); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	n, err := freeBytes(dir)
	if err != nil {
		return 0, false
	}
	return n, true
}

// CheckSpace refuses, with a *SpaceError, a download of need bytes into dir that the disk cannot
// hold. When the free space cannot be told it lets the writes say.
func CheckSpace(dir string, need int64) error {
	if free, ok := Free(dir); ok && need > free {
		return &SpaceError{Dir: dir, Need: need, Free: free}
	}
	return nil
}

// IsDiskFull reports whether err is the operating system saying the disk is full.
func IsDiskFull(err error) bool {
	var e syscall.Errno
	if !errors.As(err, &e) {
		return false
	}
	if runtime.GOOS == "windows" {
		return e == 39 || e == 112 // ERROR_HANDLE_DISK_FULL, ERROR_DISK_FULL
	}
	return e == syscall.ENOSPC || e == syscall.EDQUOT
}

// DiskFull wraps a write error so that a full disk reads as ErrDiskFull.
func DiskFull(err error, what string) error {
	if IsDiskFull(err) {
		return fmt.Errorf("%w: writing %s: %w", ErrDiskFull, what, err)
	}
	return fmt.Errorf("writing %s: %w", what, err)
}
