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
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/llamatray/llamatray/router/catalog"
	dl "github.com/llamatray/llamatray/router/download"
)

// ChecksumError says a downloaded file is not what the Hub listed; the file was deleted.
type ChecksumError struct {
	Repo, File string
	Want, Got  string
}

func (e *ChecksumError) Error() string {
	return fmt.Sprintf("%s: %s: sha256 mismatch (the Hub lists %s, the download is %s): refused and deleted", e.Repo, e.File, e.Want, e.Got)
}

// ErrCancelled is the error of a download stopped by its caller; it left nothing behind.
var ErrCancelled = errors.New("download cancelled")

// ErrPaused is the error of a download stopped to go on later: its partial files stay in the cache
// and the next pull of the same model resumes them. Cancel a context with it as the cause
// (context.WithCancelCause) to pause.
var ErrPaused = errors.New("download paused")

// NotGGUFError says a downloaded file is not a GGUF model although the Hub listed it as one; what
// the download wrote was removed.
type NotGGUFError struct {
	Repo, File string
	Err        error // catalog.CheckGGUFStart's reason
}

func (e *NotGGUFError) Error() string {
	return fmt.Sprintf("%s: %v: refused and deleted", e.Repo, e.Err)
}

func (e *NotGGUFError) Unwrap() error { return e.Err }

// resumableError marks a failure that leaves the partial files for the next try: the network or the
// Hub failed, or the disk filled up. Every other failure undoes what the download wrote.
type resumableError struct{ err error }

func (e *resumableError) Error() string { return e.err.Error() }
func (e *resumableError) Unwrap() error { return e.err }

// DownloadThen fetches quant q of listing l into the cache, verifying every file's sha256 and GGUF
// magic, and links it into snapshots/<commit>/ with refs/main pointing there. It returns the
// snapshot path of every file. A cut connection resumes with a range request; a partial file left
// by an earlier run (blobs/<sha256>.incomplete) is resumed too. Names, sizes and digests are
// checked and space for what is still missing is counted before anything is written, and every
// write goes through the cache folder's os.Root. When the network or the Hub fails for good, the
// partial files stay for the next try; on any other failure (cancel, a bad checksum, a file that
// is not GGUF) everything this call created is removed. progress, if not nil, is called four
// times a second, from another goroutine, and once more when the download is complete. accept,
// when not nil, is called with the snapshot paths once refs/main names the commit (a caller
// rescans its catalog there); when it fails, the download is undone, refs/main included.
func (c *Client) DownloadThen(ctx context.Context, cache Cache, l *Listing, q Quant, progress func(Progress), accept func([]string) error) ([]string, error) {
	if err := CheckSpace(cache, l, q); err != nil {
		return nil, err
	}
	files := q.All()
	d := &download{c: c, cache: cache, repo: l.Repo, commit: l.Commit, progress: progress, start: time.Now(), p: progressOf(files)}
	root, err := cache.open()
	if err != nil {
		return nil, err
	}
	defer root.Close()
	d.root = root
	stopTicker := d.startTicker()
	paths, err := d.run(ctx, files)
	stopTicker()
	if progress != nil {
		d.report() // the last call, the ticker stopped: what a paused or cut pull holds is its last word
	}
	if err == nil {
		err = d.finish(paths, accept)
	}
	if err != nil {
		paused := ctx.Err() != nil && errors.Is(context.Cause(ctx), ErrPaused)
		switch {
		case paused:
			err = fmt.Errorf("%s: %w", Ref{l.Repo, q.Name}, ErrPaused)
		case ctx.Err() != nil:
			err = fmt.Errorf("%s: %w", Ref{l.Repo, q.Name}, ErrCancelled)
		}
		var re *resumableError
		if !paused && (ctx.Err() != nil || !errors.As(err, &re)) {
			d.undo()
		}
		return nil, err
	}
	return paths, nil
}

// checkDownload refuses, before anything is written, a listing whose names could lead out of the
// cache or whose files cannot be verified.
func checkDownload(l *Listing, files []File) error {
	if err := checkRepo(l.Repo); err != nil {
		return err
	}
	if !validCommit(l.Commit) {
		return fmt.Errorf("%s: %w: the commit %q is not 40 hex digits", l.Repo, ErrUnsafe, l.Commit)
	}
	for _, f := range files {
		if err := checkRepoPath(f.Path); err != nil {
			return fmt.Errorf("%s: %w", l.Repo, err)
		}
		if !validSHA(f.SHA256) {
			return fmt.Errorf("%s: %s is not stored in LFS with a sha256, so it cannot be verified: refused", l.Repo, f.Path)
		}
		if f.Size <= 0 {
			return fmt.Errorf("%s: %s: the Hub lists a size of %d bytes: refused", l.Repo, f.Path, f.Size)
		}
	}
	return nil
}

func validSHA(s string) bool { return len(s) == 64 && isHex(s) }

// checkRepo refuses a repo name that could lead out of the cache.
func checkRepo(repo string) error {
	if !repoRe.MatchString(repo) || strings.Contains(repo, "..") {
		return fmt.Errorf("%w: %q is not ORG/REPO", ErrUnsafe, repo)
	}
	return nil
}

// download is one Download call's state; only its goroutine uses it, but for p and samples.
type download struct {
	c            *Client
	cache        Cache
	root         *os.Root // the cache folder: every path below is relative to it
	repo, commit string
	progress     func(Progress)
	start        time.Time
	mu           sync.Mutex // guards p and speed: the download and the progress ticker share them
	p            Progress
	speed        dl.Speed
	created      []string // paths this download created, removed by undo
	repoExisted  bool
	refSet       bool   // refs/main was written
	oldRef       []byte // what refs/main held before (nil: there was none)
}

// CheckSpace refuses, before anything is written, a listing whose names could lead out of the
// cache or whose files cannot be verified (checkDownload), and a download of q the disk cannot
// hold (a *download.SpaceError), counting what the cache already has of it.
func CheckSpace(cache Cache, l *Listing, q Quant) error {
	if err := checkDownload(l, q.All()); err != nil {
		return err
	}
	var need int64
	for _, f := range q.All() {
		blob := filepath.Join(cache.Dir, blobRel(l.Repo, f.SHA256))
		if st, err := os.Stat(blob); err == nil && st.Size() == f.Size {
			continue
		}
		have := int64(0)
		if st, err := os.Stat(blob + ".incomplete"); err == nil && st.Size() <= f.Size {
			have = st.Size()
		}
		need += f.Size - have
	}
	return dl.CheckSpace(cache.Dir, need)
}

func (d *download) run(ctx context.Context, files []File) ([]string, error) {
	_, err := d.root.Lstat(repoRel(d.repo))
	d.repoExisted = err == nil
	var paths []string
	for i, f := range files {
		d.mu.Lock()
		d.p.File = f.Path
		d.mu.Unlock()
		if err := d.file(ctx, i, f); err != nil {
			return nil, err
		}
		snap := snapshotRel(d.repo, d.commit, f.Path)
		_, statErr := d.root.Lstat(snap)
		if err := link(d.root, d.repo, d.commit, f.Path, f.SHA256); err != nil {
			return nil, fmt.Errorf("%s: linking %s into the snapshot: %w", d.repo, f.Path, err)
		}
		if statErr != nil {
			d.created = append(d.created, snap)
		}
		paths = append(paths, filepath.Join(d.cache.Dir, snap))
	}
	return paths, nil
}

// finish points refs/main at the commit and asks accept, if any.
func (d *download) finish(paths []string, accept func([]string) error) error {
	ref := refRel(d.repo, "main")
	if old, err := d.root.ReadFile(ref); err == nil {
		d.oldRef = old
	}
	if err := setRef(d.root, d.repo, "main", d.commit); err != nil {
		return fmt.Errorf("%s: writing refs/main: %w", d.repo, err)
	}
	d.refSet = true
	if accept != nil {
		if err := accept(paths); err != nil {
			return fmt.Errorf("%s: %w", d.repo, err)
		}
	}
	return nil
}

// Limits of one file's download: attempts in a row that bring no new byte, and attempts in all.
const maxStalls = 5

func maxAttempts(size int64) int { return 100 + int(size>>20) }

// file brings one blob into the cache: resumed from its partial file, verified, renamed.
func (d *download) file(ctx context.Context, i int, f File) error {
	blob := blobRel(d.repo, f.SHA256)
	if _, err := d.root.Lstat(lockRel(d.repo, f.SHA256)); err != nil {
		d.created = append(d.created, lockRel(d.repo, f.SHA256))
	}
	unlock, err := lockBlob(ctx, d.root, d.repo, f.SHA256)
	if err != nil {
		return err
	}
	defer unlock()
	if st, err := d.root.Lstat(blob); err == nil && st.Mode().IsRegular() && st.Size() == f.Size {
		d.mu.Lock()
		have := d.p.Files[i].Done
		d.mu.Unlock()
		d.advance(i, f.Size-have, true)
		return d.checkGGUF(f, blob)
	}
	if err := d.root.MkdirAll(filepath.Dir(blob), 0o755); err != nil {
		return &resumableError{err}
	}
	part := blob + ".incomplete"
	_, statErr := d.root.Lstat(part)
	out, err := d.root.OpenFile(part, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return &resumableError{err}
	}
	if statErr != nil {
		d.created = append(d.created, part)
	}
	defer out.Close()
	h, off, err := resume(out, f.Size)
	if err != nil {
		return err
	}
	defer h.stop()
	d.advance(i, off, true)
	if err := d.fill(ctx, i, f, out, h, off); err != nil {
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, dl.ErrTooLarge): // the Hub lies about the file: nothing of it is kept
			return fmt.Errorf("%w: %w", ErrTooLarge, err)
		case errors.Is(err, dl.ErrCut):
			return &resumableError{fmt.Errorf("%w; what came is kept for the next try", err)}
		}
		return &resumableError{err}
	}
	return d.keep(out, h, f, part, blob)
}

// resume hashes what the partial file out from an earlier run holds of a file of size bytes; one
// longer than that is emptied. It returns the hash so far and the bytes the file holds.
func resume(out *os.File, size int64) (*asyncHash, int64, error) {
	h := newAsyncHash()
	off, err := io.Copy(h, out)
	if err == nil && off > size {
		if err = out.Truncate(0); err == nil {
			_, err = out.Seek(0, io.SeekStart)
		}
		h.stop()
		off, h = 0, newAsyncHash()
	}
	if err != nil {
		h.stop()
		return nil, 0, err
	}
	return h, off, nil
}

// keep checks the whole file out (part) against its sha256, h's sum, and renames it to its blob;
// a file whose sum is not f's is removed.
func (d *download) keep(out *os.File, h *asyncHash, f File, part, blob string) error {
	got := hex.EncodeToString(h.Sum())
	if got != f.SHA256 {
		out.Close()
		d.root.Remove(part)
		return &ChecksumError{Repo: d.repo, File: f.Path, Want: f.SHA256, Got: got}
	}
	if err := out.Sync(); err != nil {
		return &resumableError{err}
	}
	if err := out.Close(); err != nil {
		return &resumableError{err}
	}
	if err := d.root.Rename(part, blob); err != nil {
		return err
	}
	d.created = append(d.created, blob)
	return d.checkGGUF(f, blob)
}

// checkGGUF refuses a blob that does not start with the GGUF magic, before it is linked.
func (d *download) checkGGUF(f File, blob string) error {
	in, err := d.root.Open(blob)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := catalog.CheckGGUFStart(in, path.Base(f.Path)); err != nil {
		return &NotGGUFError{Repo: d.repo, File: f.Path, Err: err}
	}
	return nil
}

// fill appends to out (and h) from byte off until it holds f.Size bytes, resuming after cuts
// with the one downloader's rules (router/download): maxStalls attempts in a row that bring no
// byte, or maxAttempts in all, end it.
func (d *download) fill(ctx context.Context, i int, f File, out io.Writer, h io.Writer, off int64) error {
	src := dl.Source{
		Request: func(ctx context.Context) (*http.Request, error) {
			return d.c.newRequest(ctx, http.MethodGet, d.c.ResolveURL(d.repo, d.commit, f.Path))
		},
		Client:    d.c.httpClient(),
		Refuse:    func(resp *http.Response) error { return hubError(resp, d.repo) },
		Size:      f.Size,
		Stall:     d.c.StallTimeout,
		Attempts:  maxAttempts(f.Size),
		MaxStalls: maxStalls,
	}
	_, err := dl.Fill(ctx, src, io.MultiWriter(out, h), off, func(n int64) { d.advance(i, n, false) })
	if err != nil {
		return fmt.Errorf("%s: %s: %w", d.repo, f.Path, err)
	}
	return nil
}

// ResolveURL is the download URL of a file at a revision: /ORG/REPO/resolve/REV/PATH.
func (c *Client) ResolveURL(repo, rev, file string) string {
	parts := strings.Split(file, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return c.Endpoint + "/" + repo + "/resolve/" + url.PathEscape(rev) + "/" + strings.Join(parts, "/")
}

// undo removes what this download created: partial and complete blobs, snapshot links, refs/main
// (put back as it was), and the repo folder when it did not exist before.
func (d *download) undo() {
	if d.refSet {
		ref := refRel(d.repo, "main")
		if d.oldRef != nil {
			_ = d.root.WriteFile(ref, d.oldRef, 0o644)
		} else {
			_ = d.root.Remove(ref)
		}
	}
	for i := len(d.created) - 1; i >= 0; i-- {
		_ = d.root.Remove(d.created[i])
	}
	locks := filepath.Dir(lockRel(d.repo, "x"))
	_ = d.root.Remove(locks) // only when empty
	_ = d.root.Remove(filepath.Dir(locks))
	if !d.repoExisted {
		_ = d.root.RemoveAll(repoRel(d.repo))
		return
	}
	pruneEmpty(d.root, filepath.Join(repoRel(d.repo), "snapshots"))
}

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

// progressOf is the progress of a download of files before it starts.
func progressOf(files []File) Progress {
	var p Progress
	for _, f := range files {
		p.Files = append(p.Files, FileProgress{Path: f.Path, Total: f.Size})
		p.Total += f.Size
	}
	return p
}

// advance counts n more bytes of file i; found bytes were already on disk: done, but not part of
// the rate.
func (d *download) advance(i int, n int64, found bool) {
	d.mu.Lock()
	d.p.Files[i].Done += n
	d.p.Done += n
	if found {
		d.speed.Found(n)
	}
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

// report computes rate and time left over the last seconds (download.Speed) and calls progress. Only the
// ticker calls it, and Download once after the ticker stopped, so calls never overlap.
func (d *download) report() {
	d.mu.Lock()
	d.p.Rate, d.p.Left = d.speed.At(time.Now(), d.p.Done, d.p.Total)
	p := d.p
	p.Files = append([]FileProgress(nil), d.p.Files...)
	d.mu.Unlock()
	d.progress(p)
}
