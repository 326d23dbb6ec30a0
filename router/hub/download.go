package hub

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/llamatray/llamatray/router/config"
)

// ChecksumError says a downloaded file is not what the Hub listed; the file was deleted.
type ChecksumError struct {
	Repo, File string
	Want, Got  string
}

func (e *ChecksumError) Error() string {
	return fmt.Sprintf("%s: %s: sha256 mismatch (the Hub lists %s, the download is %s): refused and deleted", e.Repo, e.File, e.Want, e.Got)
}

// DiskSpaceError says a download was refused before it started for want of space.
type DiskSpaceError struct {
	Dir        string
	Need, Free int64
}

func (e *DiskSpaceError) Error() string {
	return fmt.Sprintf("not enough disk space in %s: the download needs %s, %s is free", e.Dir, config.HumanSize(e.Need), config.HumanSize(e.Free))
}

// ErrCancelled is the error of a download stopped by its caller; it left nothing behind.
var ErrCancelled = errors.New("download cancelled")

// FileProgress is one file of a download.
type FileProgress struct {
	Path  string `json:"path"`
	Done  int64  `json:"done"`
	Total int64  `json:"total"`
}

// Progress is a download's state, reported as it goes.
type Progress struct {
	Files []FileProgress
	Done  int64
	Total int64
	Rate  float64       // bytes per second over the last seconds
	Left  time.Duration // time left at Rate; 0 when unknown
	File  string        // the file being downloaded now
}

// Download fetches quant q of listing l into the cache, verifying every file's sha256, and links
// it into snapshots/<commit>/ with refs/main pointing there. It returns the snapshot path of
// every file. A cut connection resumes with a range request; a partial file left by an earlier
// run (blobs/<sha256>.incomplete) is resumed too. Space for what is still missing is checked
// before anything is written. When ctx ends (cancel) or a file fails verification, everything
// this call created is removed; when the network fails for good, the partial files stay for the
// next try. progress, if not nil, is called four times a second, from another goroutine, and
// once more when the download is complete.
func (c *Client) Download(ctx context.Context, cache Cache, l *Listing, q Quant, progress func(Progress)) ([]string, error) {
	files := q.All()
	d := &download{c: c, cache: cache, repo: l.Repo, commit: l.Commit, progress: progress, start: time.Now()}
	for _, f := range files {
		if !validSHA(f.SHA256) {
			return nil, fmt.Errorf("%s: %s is not stored in LFS with a sha256, so it cannot be verified: refused", l.Repo, f.Path)
		}
		d.p.Files = append(d.p.Files, FileProgress{Path: f.Path, Total: f.Size})
		d.p.Total += f.Size
	}
	if err := d.checkSpace(files); err != nil {
		return nil, err
	}
	stopTicker := d.startTicker()
	paths, err := d.run(ctx, files)
	stopTicker()
	if err == nil && progress != nil {
		d.report() // the last call: the ticker has stopped
	}
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%s: %w", Ref{l.Repo, q.Name}, ErrCancelled)
		}
		var ce *ChecksumError
		if ctx.Err() != nil || errors.As(err, &ce) {
			d.undo()
		}
		return nil, err
	}
	if err := cache.setRef(l.Repo, "main", l.Commit); err != nil {
		return nil, fmt.Errorf("%s: writing refs/main: %w", l.Repo, err)
	}
	return paths, nil
}

func validSHA(s string) bool {
	if len(s) != 64 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// download is one Download call's state; only its goroutine uses it.
type download struct {
	c            *Client
	cache        Cache
	repo, commit string
	progress     func(Progress)
	start        time.Time
	mu           sync.Mutex // guards p and samples: the download and the progress ticker share them
	p            Progress
	samples      []sample
	created      []string // paths this download created, removed by undo
	repoExisted  bool
}

type sample struct {
	at    time.Time
	bytes int64
}

// CheckSpace refuses, before anything is written, a download of q the disk cannot hold,
// counting what the cache already has of it.
func CheckSpace(cache Cache, l *Listing, q Quant) error {
	d := &download{cache: cache, repo: l.Repo}
	return d.checkSpace(q.All())
}

// checkSpace refuses a download the disk cannot hold, counting what is already there.
func (d *download) checkSpace(files []File) error {
	var need int64
	for _, f := range files {
		blob := d.cache.blob(d.repo, f.SHA256)
		if st, err := os.Stat(blob); err == nil && st.Size() == f.Size {
			continue
		}
		have := int64(0)
		if st, err := os.Stat(blob + ".incomplete"); err == nil && st.Size() <= f.Size {
			have = st.Size()
		}
		need += f.Size - have
	}
	dir := d.cache.Dir
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
	free, err := freeBytes(dir)
	if err != nil {
		return nil // cannot tell: let the writes say
	}
	if need > free {
		return &DiskSpaceError{Dir: d.cache.Dir, Need: need, Free: free}
	}
	return nil
}

func (d *download) run(ctx context.Context, files []File) ([]string, error) {
	_, err := os.Stat(d.cache.RepoDir(d.repo))
	d.repoExisted = err == nil
	var paths []string
	for i, f := range files {
		d.mu.Lock()
		d.p.File = f.Path
		d.mu.Unlock()
		if err := d.file(ctx, i, f); err != nil {
			return nil, err
		}
		snap := d.cache.snapshot(d.repo, d.commit, f.Path)
		_, statErr := os.Lstat(snap)
		if err := d.cache.link(d.repo, d.commit, f.Path, f.SHA256); err != nil {
			return nil, fmt.Errorf("%s: linking %s into the snapshot: %w", d.repo, f.Path, err)
		}
		if statErr != nil {
			d.created = append(d.created, snap)
		}
		paths = append(paths, snap)
	}
	return paths, nil
}

// maxStalls is how many attempts in a row may bring no new byte before a download gives up.
const maxStalls = 5

// file brings one blob into the cache: resumed from its partial file, verified, renamed.
func (d *download) file(ctx context.Context, i int, f File) error {
	blob := d.cache.blob(d.repo, f.SHA256)
	if _, err := os.Stat(d.cache.lockPath(d.repo, f.SHA256)); err != nil {
		d.created = append(d.created, d.cache.lockPath(d.repo, f.SHA256))
	}
	unlock, err := d.cache.lockBlob(ctx, d.repo, f.SHA256)
	if err != nil {
		return err
	}
	defer unlock()
	if st, err := os.Stat(blob); err == nil && st.Size() == f.Size {
		d.mu.Lock()
		have := d.p.Files[i].Done
		d.mu.Unlock()
		d.advance(i, f.Size-have)
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(blob), 0o755); err != nil {
		return err
	}
	part := blob + ".incomplete"
	_, statErr := os.Stat(part)
	out, err := os.OpenFile(part, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	if statErr != nil {
		d.created = append(d.created, part)
	}
	defer out.Close()
	h := newAsyncHash()
	defer func() { h.stop() }()
	off, err := io.Copy(h, out) // a partial file from an earlier run: hash what it holds
	if err != nil {
		return err
	}
	if off > f.Size {
		if err := out.Truncate(0); err != nil {
			return err
		}
		h.stop()
		off, h = 0, newAsyncHash()
	}
	d.advance(i, off)
	stalls := 0
	for off < f.Size {
		n, err := d.fetch(ctx, f, out, h, off, i)
		off += n
		if err == nil {
			continue
		}
		var he *Error
		if ctx.Err() != nil || errors.As(err, &he) {
			return err
		}
		if errors.Is(err, errRestart) {
			if err := out.Truncate(0); err != nil {
				return err
			}
			if _, err := out.Seek(0, io.SeekStart); err != nil {
				return err
			}
			d.advance(i, -off)
			h.stop()
			off, h = 0, newAsyncHash()
			continue
		}
		if n > 0 {
			stalls = 0
		} else if stalls++; stalls >= maxStalls {
			return fmt.Errorf("%s: %s: download failed after %d tries (%d of %d bytes kept for the next try): %w", d.repo, f.Path, stalls, off, f.Size, err)
		}
		t := time.NewTimer(time.Duration(stalls) * 500 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
	got := hex.EncodeToString(h.Sum())
	if got != f.SHA256 {
		out.Close()
		os.Remove(part)
		return &ChecksumError{Repo: d.repo, File: f.Path, Want: f.SHA256, Got: got}
	}
	if err := out.Sync(); err != nil {
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	if err := os.Rename(part, blob); err != nil {
		return err
	}
	d.created = append(d.created, blob)
	return nil
}

// errRestart says the server ignored the range and sent the file from its start.
var errRestart = errors.New("server restarted the file")

// fetch sends one request for f from byte off and appends what arrives to out and h. It returns
// the bytes appended.
func (d *download) fetch(ctx context.Context, f File, out io.Writer, h io.Writer, off int64, i int) (int64, error) {
	stallAfter := d.c.StallTimeout
	if stallAfter <= 0 {
		stallAfter = DefaultStallTimeout
	}
	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	errStalled := fmt.Errorf("no data for %s", stallAfter)
	stall := time.AfterFunc(stallAfter, func() { cancel(errStalled) })
	defer stall.Stop()
	req, err := d.c.newRequest(rctx, http.MethodGet, d.c.ResolveURL(d.repo, d.commit, f.Path))
	if err != nil {
		return 0, err
	}
	if off > 0 {
		req.Header.Set("Range", "bytes="+strconv.FormatInt(off, 10)+"-")
	}
	resp, err := d.c.httpClient().Do(req)
	if err != nil {
		return 0, err
	}
	switch {
	case resp.StatusCode == http.StatusPartialContent && off > 0:
		if !strings.HasPrefix(resp.Header.Get("Content-Range"), "bytes "+strconv.FormatInt(off, 10)+"-") {
			resp.Body.Close()
			return 0, errRestart
		}
	case resp.StatusCode == http.StatusOK && off > 0:
		resp.Body.Close()
		return 0, errRestart
	case resp.StatusCode == http.StatusOK:
	case resp.StatusCode == http.StatusRequestedRangeNotSatisfiable:
		resp.Body.Close()
		return 0, errRestart
	default:
		return 0, hubError(resp, d.repo)
	}
	defer resp.Body.Close()
	buf := make([]byte, 256<<10)
	var n int64
	for {
		k, rerr := resp.Body.Read(buf)
		stall.Reset(stallAfter)
		if k > 0 {
			if off+n+int64(k) > f.Size {
				return n, fmt.Errorf("%s: %s: the server sent more than the listed %d bytes", d.repo, f.Path, f.Size)
			}
			if _, err := out.Write(buf[:k]); err != nil {
				return n, err
			}
			h.Write(buf[:k])
			n += int64(k)
			d.advance(i, int64(k))
		}
		if rerr == io.EOF {
			if off+n < f.Size {
				return n, io.ErrUnexpectedEOF
			}
			return n, nil
		}
		if rerr != nil {
			if cause := context.Cause(rctx); cause == errStalled {
				return n, cause
			}
			return n, rerr
		}
	}
}

// ResolveURL is the download URL of a file at a revision: /ORG/REPO/resolve/REV/PATH.
func (c *Client) ResolveURL(repo, rev, file string) string {
	parts := strings.Split(file, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return c.Endpoint + "/" + repo + "/resolve/" + url.PathEscape(rev) + "/" + strings.Join(parts, "/")
}

// advance counts n more bytes of file i (negative: bytes dropped).
func (d *download) advance(i int, n int64) {
	d.mu.Lock()
	d.p.Files[i].Done += n
	d.p.Done += n
	d.mu.Unlock()
}

// startTicker reports progress four times a second until the returned function is called; that
// function returns once no report runs any more.
func (d *download) startTicker() func() {
	if d.progress == nil {
		return func() {}
	}
	stop := make(chan struct{})
	ticked := make(chan struct{})
	go func() {
		defer close(ticked)
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				d.report()
			case <-stop:
				return
			}
		}
	}()
	return func() { close(stop); <-ticked }
}

// report computes rate and time left over the last five seconds and calls progress. Only the
// ticker calls it, and Download once after the ticker stopped, so calls never overlap.
func (d *download) report() {
	now := time.Now()
	d.mu.Lock()
	d.samples = append(d.samples, sample{now, d.p.Done})
	for len(d.samples) > 2 && now.Sub(d.samples[0].at) > 5*time.Second {
		d.samples = d.samples[1:]
	}
	first := d.samples[0]
	d.p.Rate = 0
	if dt := now.Sub(first.at).Seconds(); dt > 0.05 {
		d.p.Rate = float64(d.p.Done-first.bytes) / dt
	}
	d.p.Left = 0
	if d.p.Rate > 0 {
		d.p.Left = time.Duration(float64(d.p.Total-d.p.Done) / d.p.Rate * float64(time.Second))
	}
	p := d.p
	p.Files = append([]FileProgress(nil), d.p.Files...)
	d.mu.Unlock()
	d.progress(p)
}

// undo removes what this download created: partial and complete blobs, snapshot links, and the
// repo folder when it did not exist before.
func (d *download) undo() {
	for i := len(d.created) - 1; i >= 0; i-- {
		_ = os.Remove(d.created[i])
	}
	locks := filepath.Dir(d.cache.lockPath(d.repo, "x"))
	_ = os.Remove(locks) // only when empty
	_ = os.Remove(filepath.Dir(locks))
	dir := d.cache.RepoDir(d.repo)
	if !d.repoExisted {
		_ = os.RemoveAll(dir)
		return
	}
	pruneEmpty(filepath.Join(dir, "snapshots"))
}
