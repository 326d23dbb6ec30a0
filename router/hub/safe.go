package hub

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"
)

// What the Hub (or a mirror set through HF_ENDPOINT) sends is checked here before it names a file:
// a commit, a tree path, a blob name. Every write then goes through an os.Root on the cache folder
// (cache.go), so that even a name these checks let through cannot leave it.

// ErrUnsafe is matched by the error of a listing or download that names a file Llamatray will not
// write: a commit that is not 40 hex digits, a path that is absolute, climbs with "..", or holds a
// backslash, a colon, NUL or another control character.
var ErrUnsafe = errors.New("unsafe name from the Hub")

// ErrTooLarge is matched when an answer of the Hub is longer than Llamatray reads.
var ErrTooLarge = errors.New("answer too large")

// Bounds on what is read from the Hub's API.
const (
	maxAPIAnswer   = 16 << 20 // one JSON answer (a search, a model, a page of a tree listing)
	maxTreeEntries = 100_000  // entries of one repo's tree listing, all pages together
	maxTreePages   = 100
	maxPathLen     = 1024
)

// validCommit reports whether s is a git commit as the Hub names revisions: 40 lowercase hex digits.
func validCommit(s string) bool { return len(s) == 40 && isHex(s) }

// validBlobName reports whether s names a blob of the cache: a sha256 (LFS files) or a git blob id.
func validBlobName(s string) bool { return (len(s) == 64 || len(s) == 40) && isHex(s) }

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// checkRepoPath refuses a repo file path that could name anything but a file inside a snapshot
// folder: it must be relative, slash-separated, valid UTF-8, without empty, "." or ".." elements,
// backslashes, colons (drive letters and NTFS streams), NUL or other control characters.
func checkRepoPath(p string) error {
	bad := func(why string) error { return fmt.Errorf("%w: file path %q %s", ErrUnsafe, p, why) }
	switch {
	case p == "":
		return bad("is empty")
	case len(p) > maxPathLen:
		return bad(fmt.Sprintf("is longer than %d bytes", maxPathLen))
	case !utf8.ValidString(p):
		return bad("is not UTF-8")
	case strings.HasPrefix(p, "/"):
		return bad("is absolute")
	case strings.ContainsAny(p, `\:`):
		return bad("holds a backslash or a colon")
	case strings.ContainsFunc(p, unicode.IsControl):
		return bad("holds a control character")
	}
	for _, part := range strings.Split(p, "/") {
		switch part {
		case "":
			return bad("has an empty element")
		case ".", "..":
			return bad("has a . or .. element")
		}
	}
	if !filepath.IsLocal(filepath.FromSlash(p)) {
		return bad("is not a plain file name on this system") // Windows: NUL, COM1, …
	}
	return nil
}

// capped reads at most limit bytes of r; past that it fails with ErrTooLarge, so that an endless
// answer ends as an error instead of filling memory.
type capped struct {
	r     io.Reader
	limit int64
	read  int64
	what  string
}

func capReader(r io.Reader, limit int64, what string) io.Reader {
	return &capped{r: r, limit: limit, what: what}
}

func (c *capped) Read(p []byte) (int, error) {
	if c.read >= c.limit {
		// One byte more tells an answer of exactly limit bytes from a longer one.
		var one [1]byte
		if n, err := io.ReadFull(c.r, one[:]); n == 0 {
			return 0, err // io.EOF: the answer was exactly limit bytes
		}
		return 0, fmt.Errorf("%s: %w (more than %d MiB)", c.what, ErrTooLarge, c.limit>>20)
	}
	if left := c.limit - c.read; int64(len(p)) > left {
		p = p[:left]
	}
	n, err := c.r.Read(p)
	c.read += int64(n)
	return n, err
}
