package hub

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/llamatray/llamatray/router/catalog"
)

// Repo is one search result.
type Repo struct {
	ID        string   `json:"id"`
	Downloads int64    `json:"downloads"`
	Likes     int64    `json:"likes"`
	Gated     bool     `json:"gated"`
	Private   bool     `json:"private"`
	Tags      []string `json:"tags,omitempty"`
	Modified  string   `json:"last_modified,omitempty"`
}

// repoJSON is the Hub's model document, in /api/models lists and /api/models/{repo}: "id",
// "sha" (the commit of the revision asked for), "gated" (false, "auto" or "manual"),
// "private", "downloads", "likes", "tags", "lastModified", "siblings[].rfilename".
type repoJSON struct {
	ID           string          `json:"id"`
	SHA          string          `json:"sha"`
	Gated        json.RawMessage `json:"gated"`
	Private      bool            `json:"private"`
	Downloads    int64           `json:"downloads"`
	Likes        int64           `json:"likes"`
	Tags         []string        `json:"tags"`
	LastModified string          `json:"lastModified"`
}

func (r repoJSON) repo() Repo {
	g := strings.TrimSpace(string(r.Gated))
	return Repo{ID: r.ID, Downloads: r.Downloads, Likes: r.Likes, Private: r.Private, Tags: r.Tags, Modified: r.LastModified,
		Gated: g != "" && g != "false" && g != "null"}
}

// Search finds GGUF repos whose name matches text, most downloaded first.
func (c *Client) Search(ctx context.Context, text string, limit int) ([]Repo, error) {
	if limit <= 0 {
		limit = 30
	}
	q := url.Values{"search": {text}, "filter": {"gguf"}, "sort": {"downloads"}, "direction": {"-1"}, "limit": {strconv.Itoa(limit)}}
	var list []repoJSON
	if _, err := c.getJSON(ctx, "/api/models?"+q.Encode(), "", &list); err != nil {
		return nil, err
	}
	out := make([]Repo, 0, len(list))
	for _, r := range list {
		out = append(out, r.repo())
	}
	return out, nil
}

// repoRe is a valid ORG/REPO.
var repoRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$`)

// Ref is a model named the llama.cpp -hf way: ORG/REPO[:QUANT].
type Ref struct {
	Repo  string
	Quant string // "" = the default pick
}

func (r Ref) String() string {
	if r.Quant == "" {
		return r.Repo
	}
	return r.Repo + ":" + r.Quant
}

// ParseRef reads ORG/REPO[:QUANT]. Anything else is an error.
func ParseRef(s string) (Ref, error) {
	repo, quant, _ := strings.Cut(strings.TrimSpace(s), ":")
	if !repoRe.MatchString(repo) || strings.Contains(repo, "..") || strings.Contains(quant, "/") {
		return Ref{}, fmt.Errorf("%q is not a Hugging Face model name: want ORG/REPO or ORG/REPO:QUANT (like ggml-org/gemma-3-1b-it-GGUF:Q4_K_M)", s)
	}
	return Ref{Repo: repo, Quant: strings.ToUpper(quant)}, nil
}

// LooksLikeRef tells names that are meant as ORG/REPO:QUANT (and that the catalog did not know).
func LooksLikeRef(s string) bool {
	if !strings.Contains(s, ":") {
		return false
	}
	_, err := ParseRef(s)
	return err == nil
}

// File is one file of a repo at a commit.
type File struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"` // lfs.oid; "" for a file not in LFS (then not verifiable, refused)
}

// Quant is one quantization of a repo: its files (split shards in order) and the projector
// paired with it.
type Quant struct {
	Name   string `json:"name"`
	Files  []File `json:"files"`
	Mmproj *File  `json:"mmproj,omitempty"`
	Size   int64  `json:"size"` // every file, the projector included
}

// All returns the files to download: shards, then the projector.
func (q Quant) All() []File {
	out := slices.Clone(q.Files)
	if q.Mmproj != nil {
		out = append(out, *q.Mmproj)
	}
	return out
}

// Listing is a repo's GGUF files at one commit.
type Listing struct {
	Repo   string  `json:"repo"`
	Commit string  `json:"commit"`
	Gated  bool    `json:"gated"`
	Quants []Quant `json:"quants"`
}

// Pick returns the quant named q (case-insensitive), or for "" llama.cpp's default pick: Q4_K_M,
// else the first listed.
func (l *Listing) Pick(q string) (Quant, error) {
	if len(l.Quants) == 0 {
		return Quant{}, fmt.Errorf("%s has no GGUF model files", l.Repo)
	}
	want := strings.ToUpper(q)
	want = cmp.Or(want, "Q4_K_M")
	for _, x := range l.Quants {
		if strings.EqualFold(x.Name, want) {
			return x, nil
		}
	}
	if q == "" {
		return l.Quants[0], nil
	}
	names := make([]string, len(l.Quants))
	for i, x := range l.Quants {
		names[i] = x.Name
	}
	return Quant{}, fmt.Errorf("%w: %s has no quant %s; it has %s", ErrNoSuchQuant, l.Repo, q, strings.Join(names, ", "))
}

// ErrNoSuchQuant says a repo has no files of the quant asked for.
var ErrNoSuchQuant = errors.New("no such quant")

// treeEntry is one entry of /api/models/{repo}/tree/{rev}: "type" (file|directory), "path",
// "size", "oid" (git blob id), and for LFS files "lfs": {"oid" (sha256), "size", "pointerSize"}.
type treeEntry struct {
	Type string `json:"type"`
	Path string `json:"path"`
	Size int64  `json:"size"`
	LFS  *struct {
		OID  string `json:"oid"`
		Size int64  `json:"size"`
	} `json:"lfs"`
}

// Files lists a repo's GGUF files grouped by quant, at the commit main points to now.
func (c *Client) Files(ctx context.Context, repo string) (*Listing, error) {
	if !repoRe.MatchString(repo) {
		return nil, fmt.Errorf("%q is not ORG/REPO", repo)
	}
	var info repoJSON
	if _, err := c.getJSON(ctx, "/api/models/"+repo+"/revision/main", repo, &info); err != nil {
		return nil, err
	}
	if info.SHA == "" {
		return nil, fmt.Errorf("%s: the Hub gave no commit for main", repo)
	}
	if !validCommit(info.SHA) {
		return nil, fmt.Errorf("%s: %w: the Hub gave %q as the commit of main, not 40 hex digits", repo, ErrUnsafe, info.SHA)
	}
	var files []File
	entries := 0
	next := "/api/models/" + repo + "/tree/" + info.SHA + "?recursive=true"
	for page := 0; next != ""; page++ {
		if page == maxTreePages {
			return nil, fmt.Errorf("%s: the file list has more than %d pages: %w", repo, maxTreePages, ErrTooLarge)
		}
		var got []treeEntry
		link, err := c.getJSON(ctx, next, repo, &got)
		if err != nil {
			return nil, err
		}
		if entries += len(got); entries > maxTreeEntries {
			return nil, fmt.Errorf("%s: the file list has more than %d entries: %w", repo, maxTreeEntries, ErrTooLarge)
		}
		for _, e := range got {
			if e.Type != "file" || !strings.HasSuffix(strings.ToLower(e.Path), ".gguf") {
				continue
			}
			if err := checkRepoPath(e.Path); err != nil {
				return nil, fmt.Errorf("%s: the Hub's file list: %w: refused", repo, err)
			}
			f := File{Path: e.Path, Size: e.Size}
			if e.LFS != nil {
				f.SHA256, f.Size = strings.ToLower(e.LFS.OID), e.LFS.Size
			}
			files = append(files, f)
		}
		next = link
	}
	if strings.EqualFold(info.ID, repo) && repoRe.MatchString(info.ID) {
		repo = info.ID // the Hub's spelling names the cache folder, as in the Hub's clients
	}
	return &Listing{Repo: repo, Commit: info.SHA, Gated: info.repo().Gated, Quants: Group(files)}, nil
}

// nextLink reads the rel="next" URL of a Link header (the tree listing is paginated).
func nextLink(h string) string {
	for _, part := range strings.Split(h, ",") {
		if strings.Contains(part, `rel="next"`) {
			if i, j := strings.Index(part, "<"), strings.Index(part, ">"); i >= 0 && j > i {
				return part[i+1 : j]
			}
		}
	}
	return ""
}

// Group turns a repo's GGUF files into quants: the shards of a split model as one entry, every
// model paired with a projector from its folder (F16 preferred), sorted by size.
func Group(files []File) []Quant {
	byName := map[string]int{}
	projs := map[string][]File{} // by folder
	var models []File
	for _, f := range files {
		if catalog.IsProjector(f.Path) {
			projs[path.Dir(f.Path)] = append(projs[path.Dir(f.Path)], f)
		} else {
			models = append(models, f)
		}
	}
	sets := catalog.Splits(models, func(f File) (string, string) { return path.Dir(f.Path), path.Base(f.Path) },
		func(File, string, string) {}) // an incomplete upload is nothing llama.cpp could load: left out
	var out []Quant
	for _, set := range sets {
		q := Quant{Files: set}
		q.Name = cmp.Or(catalog.QuantOf(q.Files[0].Path), strings.TrimSuffix(path.Base(q.Files[0].Path), path.Ext(q.Files[0].Path)))
		q.Mmproj = mmproj(projs[path.Dir(q.Files[0].Path)])
		for _, f := range q.All() {
			q.Size += f.Size
		}
		if i, dup := byName[strings.ToUpper(q.Name)]; dup {
			if len(q.Files[0].Path) >= len(out[i].Files[0].Path) {
				continue // the same quant twice (another folder): the shorter path wins
			}
			out[i] = q
			continue
		}
		byName[strings.ToUpper(q.Name)] = len(out)
		out = append(out, q)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Size < out[j].Size })
	return out
}

// mmproj is the projector a quant gets of those in its folder: the F16 one, else the first; nil
// when there is none.
func mmproj(ps []File) *File {
	if len(ps) == 0 {
		return nil
	}
	p := ps[0]
	for _, x := range ps {
		if catalog.QuantOf(x.Path) == "F16" {
			p = x
			break
		}
	}
	return &p
}

// hubHosts are the Hub's host names as users paste them.
var hubHosts = []string{"hf.co", "huggingface.co", "www.huggingface.co"}

// ParsePasted reads a model name as users paste it: ORG/REPO or ORG/REPO:QUANT; the same after
// hf.co/ (Ollama's spelling) or huggingface.co/, with or without https://; or a Hub page or file
// URL — …/ORG/REPO/tree/REV, …/blob/REV/FILE, …/resolve/REV/FILE — where a GGUF file names its
// quant (Q4_K_M from model-Q4_K_M.gguf, the first shard of a split file too). A query string or
// fragment is ignored. The result is checked as ParseRef checks it.
func ParsePasted(s string) (Ref, error) {
	in := strings.TrimSpace(s)
	rest, ok := trimHost(in)
	if !ok {
		return ParseRef(in)
	}
	if i := strings.IndexAny(rest, "?#"); i >= 0 {
		rest = rest[:i]
	}
	parts := strings.Split(strings.Trim(rest, "/"), "/")
	if len(parts) < 2 {
		return Ref{}, fmt.Errorf("%q names no model: want a link like https://huggingface.co/ORG/REPO or hf.co/ORG/REPO:QUANT", s)
	}
	for i, p := range parts {
		if u, err := url.PathUnescape(p); err == nil {
			parts[i] = u
		}
	}
	repo := parts[0] + "/" + parts[1]
	switch {
	case len(parts) == 2, parts[2] == "tree", len(parts) == 3 && parts[2] == "discussions": // ORG/REPO[:QUANT], a page
		return ParseRef(repo)
	case len(parts) >= 5 && (parts[2] == "blob" || parts[2] == "resolve"):
		file := path.Base(strings.Join(parts[4:], "/"))
		if !strings.HasSuffix(strings.ToLower(file), ".gguf") || catalog.IsProjector(file) {
			return Ref{}, fmt.Errorf("%q is not a GGUF model file; paste the repo's link (https://huggingface.co/%s) and pick a quant", s, repo)
		}
		q := catalog.QuantOf(file)
		if q == "" {
			return Ref{}, fmt.Errorf("cannot tell the quant of %s from its name; use %s:QUANT", file, repo)
		}
		return ParseRef(repo + ":" + q)
	}
	return Ref{}, fmt.Errorf("%q is not a link to a model on the Hugging Face Hub: want https://huggingface.co/ORG/REPO, or ORG/REPO:QUANT", s)
}

// trimHost strips a scheme and one of the Hub's hosts; false when s names no Hub host.
func trimHost(s string) (string, bool) {
	low := strings.ToLower(s)
	for _, p := range []string{"https://", "http://"} {
		if strings.HasPrefix(low, p) {
			s, low = s[len(p):], low[len(p):]
			break
		}
	}
	for _, h := range hubHosts {
		if strings.HasPrefix(low, h+"/") {
			return s[len(h)+1:], true
		}
	}
	return s, false
}
