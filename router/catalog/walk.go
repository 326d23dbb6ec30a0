package catalog

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// maxDepth bounds how deep folders are walked.
const maxDepth = 32

// found is one .gguf file seen by a walk.
type found struct {
	path  string // as found under the root (a snapshot link in the Hugging Face cache)
	real  string // the file it resolves to
	size  int64
	mtime time.Time
	root  string
	dir   string // logical folder: shards group and projectors pair within it
	hf    *hfRepo
	hfSub string // folders between the snapshot and the file, "/"-separated
	rev   string // snapshot revision

	// In an Ollama store (ollama.go): the layer the blob is (blobModel or blobProjector; "" for a
	// file found by name), the store folder, and the manifests naming the file, sorted by name
	// after dedupe. A .gguf file that is also an Ollama blob keeps its blob's names.
	blob   string
	store  string
	ollama []ollamaRef
}

// hfRepo is one models--org--name folder of a Hugging Face hub cache.
type hfRepo struct {
	dir, org, name string
	refs           map[string]int // revision → preference (0 = refs/main, 1 = another ref)
}

// id is the repo's ORG/NAME.
func (r *hfRepo) id() string {
	if r.org == "" {
		return r.name
	}
	return r.org + "/" + r.name
}

// listing is what one walk of the model folders saw.
type listing struct {
	files    []found
	problems []problem
	print    uint64 // fingerprint: changes when anything relevant changes
}

// problem is a file or folder the catalog skipped, and why.
type problem struct{ file, reason string }

func (p problem) String() string { return p.file + ": " + p.reason }

type walker struct {
	ctx      context.Context
	l        *listing
	visited  map[string]bool // real paths of folders entered, against symlink loops
	stores   map[string]bool // real paths of Ollama stores read
	printBuf []string
}

// list walks every root and returns the .gguf files found, deduplicated.
func list(ctx context.Context, roots []string) listing {
	var l listing
	w := &walker{ctx: ctx, l: &l, visited: map[string]bool{}, stores: map[string]bool{}}
	for _, root := range roots {
		st, err := os.Stat(root)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			w.warn(root, "model folder does not exist")
			continue
		case err != nil:
			w.warn(root, fmt.Sprintf("cannot read model folder: %v", err))
			continue
		case !st.IsDir() && isGGUF(root) && st.Mode().IsRegular(): // one file (a preset's model)
			w.add(filepath.Dir(root), root, realPath(root), st, nil)
			continue
		case !st.IsDir():
			w.warn(root, "not a folder")
			continue
		}
		w.enter(root)
		w.walk(root, root, 0, nil)
	}
	l.files = preferRevisions(l.files)
	l.files = dedupe(l.files)
	sort.Strings(w.printBuf)
	h := fnv.New64a()
	for _, s := range w.printBuf {
		h.Write([]byte(s))
		h.Write([]byte{'\n'})
	}
	l.print = h.Sum64()
	return l
}

// enter marks a folder visited and reports whether it was new.
func (w *walker) enter(dir string) bool {
	real := realPath(dir)
	if w.visited[real] {
		return false
	}
	w.visited[real] = true
	return true
}

// realPath is the file p resolves to, or p when that cannot be told.
func realPath(p string) string {
	if real, err := filepath.EvalSymlinks(p); err == nil {
		return real
	}
	return p
}

func isGGUF(name string) bool { return len(name) > 5 && strings.EqualFold(name[len(name)-5:], ".gguf") }

// walk lists one folder. repo is set inside a Hugging Face snapshot.
func (w *walker) walk(root, dir string, depth int, snap *hfSnapshot) {
	if depth > maxDepth || w.ctx.Err() != nil {
		return
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		w.l.problems = append(w.l.problems, problem{dir, fmt.Sprintf("cannot read folder: %v", err)})
		return
	}
	store := snap == nil && isOllamaStore(dir, entries)
	if store {
		w.ollamaStore(root, dir)
	}
	for _, e := range entries {
		name := e.Name()
		if store && (name == "manifests" || name == "blobs") {
			continue // read as a store
		}
		full := filepath.Join(dir, name)
		switch t := e.Type(); {
		case t.IsDir():
			switch {
			case strings.HasPrefix(name, "."):
			case snap == nil && strings.HasPrefix(name, "models--"):
				w.hfRepo(root, full, depth+1)
			default:
				w.walk(root, full, depth+1, snap)
			}
		case t&fs.ModeSymlink != 0:
			st, err := os.Stat(full)
			if err != nil {
				continue // dangling link
			}
			if st.IsDir() {
				if snap == nil && !strings.HasPrefix(name, ".") && w.enter(full) {
					w.walk(root, full, depth+1, nil)
				}
				continue
			}
			if isGGUF(name) && st.Mode().IsRegular() {
				real, err := filepath.EvalSymlinks(full)
				if err != nil || strings.HasSuffix(real, ".incomplete") {
					continue
				}
				w.add(root, full, real, st, snap)
			}
		case t.IsRegular() && isGGUF(name):
			st, err := e.Info()
			if err != nil {
				continue // removed meanwhile
			}
			w.add(root, full, full, st, snap)
		}
	}
}

// hfSnapshot is the snapshot folder a walk is in.
type hfSnapshot struct {
	repo *hfRepo
	rev  string
	base string
}

func (w *walker) add(root, path, real string, st fs.FileInfo, snap *hfSnapshot) {
	f := found{path: path, real: real, size: st.Size(), mtime: st.ModTime(), root: root, dir: filepath.Dir(path)}
	if snap != nil {
		f.hf, f.rev = snap.repo, snap.rev
		if rel, err := filepath.Rel(snap.base, f.dir); err == nil && rel != "." {
			f.hfSub = filepath.ToSlash(rel)
		}
		f.dir = snap.repo.dir + "\x00" + f.hfSub
	}
	w.addFound(f)
}

// addFound lists f and adds it to the fingerprint.
func (w *walker) addFound(f found) {
	w.l.files = append(w.l.files, f)
	w.printBuf = append(w.printBuf, strings.Join([]string{"file", f.path, f.real, strconv.FormatInt(f.size, 10), strconv.FormatInt(f.mtime.UnixNano(), 10)}, "\x00"))
}

// hfRepo walks the snapshots of one models--org--name folder.
func (w *walker) hfRepo(root, dir string, depth int) {
	parts := strings.Split(strings.TrimPrefix(filepath.Base(dir), "models--"), "--")
	repo := &hfRepo{dir: dir, name: parts[len(parts)-1], refs: map[string]int{}}
	if len(parts) > 1 {
		repo.org = strings.Join(parts[:len(parts)-1], "--")
	}
	refsDir := filepath.Join(dir, "refs")
	_ = filepath.WalkDir(refsDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil || len(b) > 256 {
			return nil
		}
		rev := strings.TrimSpace(string(b))
		pref := 1
		if p == filepath.Join(refsDir, "main") {
			pref = 0
		}
		if old, ok := repo.refs[rev]; !ok || pref < old {
			repo.refs[rev] = pref
		}
		w.printBuf = append(w.printBuf, "ref\x00"+p+"\x00"+rev)
		return nil
	})
	snaps := filepath.Join(dir, "snapshots")
	revs, err := os.ReadDir(snaps)
	if err != nil {
		return
	}
	for _, r := range revs {
		if !r.IsDir() || strings.HasPrefix(r.Name(), ".") {
			continue
		}
		base := filepath.Join(snaps, r.Name())
		w.walk(root, base, depth+2, &hfSnapshot{repo: repo, rev: r.Name(), base: base})
	}
}

// preferRevisions keeps, for each file of a Hugging Face repo present in several snapshots, the
// copy from the revision refs/main names, else another ref, else the newest.
func preferRevisions(files []found) []found {
	best := map[string]int{}
	var out []found
	for _, f := range files {
		if f.hf == nil {
			out = append(out, f)
			continue
		}
		k := f.hf.dir + "\x00" + f.hfSub + "\x00" + filepath.Base(f.path)
		i, ok := best[k]
		if !ok {
			best[k] = len(out)
			out = append(out, f)
			continue
		}
		if cmp.Or(cmp.Compare(revRank(f), revRank(out[i])), out[i].mtime.Compare(f.mtime)) < 0 {
			out[i] = f
		}
	}
	return out
}

// dedupe drops files already seen through another path (overlapping folders, links, tags of one
// Ollama blob); the file kept takes the Ollama names of those dropped.
func dedupe(files []found) []found {
	seen := map[string]int{}
	out := files[:0]
	for _, f := range files {
		if i, ok := seen[f.real]; ok {
			out[i].ollama = append(out[i].ollama, f.ollama...)
			continue
		}
		seen[f.real] = len(out)
		out = append(out, f)
	}
	for i := range out {
		out[i].ollama = sortRefs(out[i].ollama)
	}
	return out
}

// shardRe matches the name of one file of a split model, as gguf-split writes it, in any case:
// prefix, shard number, "-of-", shard count, extension.
var shardRe = regexp.MustCompile(`(?i)^(.*)-(\d{5})(-of-)(\d{5})(\.gguf)$`)

// Shard is the name of one file of a split model, "name-00002-of-00003.gguf".
type Shard struct {
	Prefix string // "name"
	N      int    // this file's number, from 1
	Total  int    // how many files the model has
	of     string // "-of-" as written
	count  string // Total as written
	ext    string // ".gguf" as written
}

// ParseShard reads a file name (no folder) as a shard of a split model; ok is false for any other name.
func ParseShard(name string) (s Shard, ok bool) {
	m := shardRe.FindStringSubmatch(name)
	if m == nil {
		return Shard{}, false
	}
	n, _ := strconv.Atoi(m[2])
	total, _ := strconv.Atoi(m[4])
	return Shard{Prefix: m[1], N: n, Total: total, of: m[3], count: m[4], ext: m[5]}, true
}

// Name is the file name of shard n of the same model, written as this one is.
func (s Shard) Name(n int) string {
	return fmt.Sprintf("%s-%05d%s%s%s", s.Prefix, n, s.of, s.count, s.ext)
}

// Splits sorts files (loc gives a file's folder and name) into models: each file that is no shard
// alone, in order, then the shards of each split model, in the order first seen, shards in order.
// A split model with a shard number out of range, twice or missing is left out and told to bad,
// with one of its files and the name of its first shard.
func Splits[T any](files []T, loc func(T) (dir, name string), bad func(of T, first, why string)) (sets [][]T) {
	type key struct {
		dir, prefix string
		total       int
	}
	groups := map[key][]T{}
	var keys []key
	for _, f := range files {
		dir, name := loc(f)
		sh, ok := ParseShard(name)
		if !ok {
			sets = append(sets, []T{f})
			continue
		}
		k := key{dir, sh.Prefix, sh.Total}
		if _, seen := groups[k]; !seen {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], f)
	}
	for _, k := range keys {
		shards := groups[k]
		byNo := make(map[int]*T, len(shards)) // not total's size: a name may declare 99999 shards
		var why string
		for i := range shards {
			_, name := loc(shards[i])
			sh, _ := ParseShard(name)
			switch {
			case sh.N < 1 || sh.N > k.total:
				why = fmt.Sprintf("shard number %d is outside 1..%d", sh.N, k.total)
			case byNo[sh.N] != nil:
				why = fmt.Sprintf("shard %d appears twice", sh.N)
			default:
				byNo[sh.N] = &shards[i]
			}
		}
		if why == "" && len(byNo) < k.total {
			var missing []string // the first few; a count says the rest
			for n := 1; n <= k.total && len(missing) < 8; n++ {
				if byNo[n] == nil {
					missing = append(missing, strconv.Itoa(n))
				}
			}
			if more := k.total - len(byNo) - len(missing); more > 0 {
				missing = append(missing, fmt.Sprintf("%d more", more))
			}
			why = fmt.Sprintf("split model is missing shard %s of %d", strings.Join(missing, ", "), k.total)
		}
		if why != "" {
			bad(shards[0], fmt.Sprintf("%s-%05d-of-%05d.gguf", k.prefix, 1, k.total), why)
			continue
		}
		set := make([]T, k.total)
		for n := range set {
			set[n] = *byNo[n+1]
		}
		sets = append(sets, set)
	}
	return sets
}

// ShardPaths lists the paths of every file of the split model that path is a shard of, in order,
// whether they exist or not; for a file that is not a shard it is just path.
func ShardPaths(path string) []string {
	s, ok := ParseShard(filepath.Base(path))
	if !ok {
		return []string{path}
	}
	out := make([]string, 0, s.Total)
	for i := 1; i <= s.Total; i++ {
		out = append(out, filepath.Join(filepath.Dir(path), s.Name(i)))
	}
	return out
}

// CheckGGUF says why the file at path is not a GGUF model, from its first bytes (the magic); nil
// when it is one. The catalog's scan reads the whole header; this is the quick check for a file
// a user picks.
func CheckGGUF(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return CheckGGUFStart(f, filepath.Base(path))
}

// CheckGGUFStart is CheckGGUF of a file already open (name is for the message): r is its start.
func CheckGGUFStart(r io.Reader, name string) error {
	var magic [4]byte
	if _, err := io.ReadFull(r, magic[:]); err != nil {
		return fmt.Errorf("%s is not a GGUF model: too short", name)
	}
	if err := checkMagic(magic); err != nil {
		return fmt.Errorf("%s is not a GGUF model: %w", name, err)
	}
	return nil
}

// checkMagic accepts the GGUF magic and names the old GGML formats.
func checkMagic(magic [4]byte) error {
	switch string(magic[:]) {
	case "GGUF":
		return nil
	case "lmgg", "fmgg", "tjgg", "GGML", "GGMF", "GGJT":
		return errors.New("old GGML format (convert it to GGUF)")
	}
	return fmt.Errorf("not a GGUF file (magic %q)", magic[:])
}
