// Package fakehub is a local stand-in of the Hugging Face Hub for tests: the search, model info,
// file tree and resolve endpoints with the Hub's response shapes, serving real files (GGUFs from
// the test bed's writer), with faults a test can switch on: a connection cut halfway, a wrong
// sha256, a download that stalls, a gated repo that wants a token.
//
// The fields and headers it answers with, and where the Hub documents them:
//
//   - GET /api/models?search=&filter=gguf&sort=downloads&limit= → a JSON array of models, each
//     with "id", "modelId", "_id", "downloads", "likes", "private", "gated" (false, "auto" or
//     "manual"), "tags", "lastModified", "createdAt" (Hub API docs, https://huggingface.co/docs/hub/api
//     "GET /api/models"; huggingface_hub HfApi.list_models and its ModelInfo).
//   - GET /api/models/ORG/REPO and /api/models/ORG/REPO/revision/REV → one model with "sha" (the
//     commit), "siblings": [{"rfilename"}], "gated", "private" (Hub API docs "GET
//     /api/models/{repo_id}" and "/revision/{revision}"; HfApi.model_info). Public for gated repos.
//   - GET /api/models/ORG/REPO/tree/REV?recursive=true → entries {"type": "file"|"directory",
//     "oid", "size", "path", "lfs": {"oid": sha256, "size", "pointerSize"}} (HfApi.list_repo_tree,
//     RepoFile / BlobLfsInfo), paginated with a Link: <…>; rel="next" header (this stand-in
//     serves one page).
//   - GET|HEAD /ORG/REPO/resolve/REV/PATH → for LFS files 302 to a content host with
//     X-Repo-Commit, X-Linked-Etag ("\"<sha256>\""), X-Linked-Size, ETag (huggingface_hub
//     file_download.py, get_hf_file_metadata and the "Hub Local Cache" docs page). The content host is
//     a second listener on another host name (localhost vs 127.0.0.1), so a test can tell the
//     token never reaches it; it honours Range with 206 and Content-Range (RFC 9110).
//   - Gated repo without a token: resolve answers 401 with X-Error-Code: GatedRepo and an
//     X-Error-Message (huggingface_hub utils/_http.py hf_raise_for_status); with a token lacking
//     access, 403. A missing repo: 404 with X-Error-Code: RepoNotFound.
package fakehub

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Hub is the stand-in. Configure it before use; the fault switches may change while it serves.
type Hub struct {
	api *httptest.Server
	cdn *httptest.Server

	mu    sync.Mutex // guards repos and every repo's fields
	repos map[string]*repo

	rangeRequests atomic.Int64
	treeBytes     atomic.Int64 // bytes of endless tree listings sent
	cdnAuth       atomic.Int64 // content requests that carried Authorization (must stay 0)
	cdnRequests   atomic.Int64
}

type repo struct {
	id      string
	commit  string
	token   string // gated: the token that has access; "" = public
	files   map[string]*file
	endless bool // the tree listing never ends (a hostile mirror)
}

type file struct {
	path   string
	local  string // the file served
	size   int64
	sha    string // real sha256
	shown  string // sha256 advertised (wrong when a fault asks)
	cutAt  int64  // > 0: the next content GET is cut after this many bytes, once
	stall  int64  // > 0: content GETs stop after this offset until the client leaves
	stalls chan struct{}
	listed *int64 // the size the tree listing gives, when it lies
	// ignoreRange: content GETs answer 200 with the whole file whatever Range asks, each cut after
	// cutEvery bytes when that is > 0 (a hostile or broken mirror).
	ignoreRange bool
	cutEvery    int64
}

// New starts the stand-in. Close it when done.
func New() *Hub {
	h := &Hub{repos: map[string]*repo{}}
	h.api = httptest.NewServer(http.HandlerFunc(h.serveAPI))
	h.cdn = httptest.NewUnstartedServer(http.HandlerFunc(h.serveCDN))
	ln, err := net.Listen("tcp", "localhost:0")
	if err == nil {
		h.cdn.Listener.Close()
		h.cdn.Listener = ln
	}
	h.cdn.Start()
	return h
}

// URL is the Hub endpoint (for HF_ENDPOINT).
func (h *Hub) URL() string { return h.api.URL }

// Close stops both listeners.
func (h *Hub) Close() {
	h.api.CloseClientConnections()
	h.cdn.CloseClientConnections()
	h.api.Close()
	h.cdn.Close()
}

// AddRepo publishes repo id (ORG/REPO) with files: repo path → local file. Its commit is
// derived from the content.
func (h *Hub) AddRepo(id string, files map[string]string) error {
	r := &repo{id: id, files: map[string]*file{}}
	c := sha1.New()
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		f, err := hashFile(files[p])
		if err != nil {
			return err
		}
		f.path = p
		r.files[p] = f
		fmt.Fprintf(c, "%s %s\n", p, f.sha)
	}
	r.commit = hex.EncodeToString(c.Sum(nil))
	h.mu.Lock()
	h.repos[strings.ToLower(id)] = r
	h.mu.Unlock()
	return nil
}

func hashFile(path string) (*file, error) {
	in, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer in.Close()
	s := sha256.New()
	n, err := io.Copy(s, in)
	if err != nil {
		return nil, err
	}
	sum := hex.EncodeToString(s.Sum(nil))
	return &file{local: path, size: n, sha: sum, shown: sum}, nil
}

func (h *Hub) file(id, path string) *file {
	r := h.repos[strings.ToLower(id)]
	if r == nil || r.files[path] == nil {
		panic(fmt.Sprintf("fakehub: no file %s in %s", path, id))
	}
	return r.files[path]
}

// Gate makes repo id gated: its files need "Authorization: Bearer token".
func (h *Hub) Gate(id, token string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.repos[strings.ToLower(id)].token = token
}

// CutOnce cuts the next content download of a file after at bytes (the connection drops).
func (h *Hub) CutOnce(id, path string, at int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.file(id, path).cutAt = at
}

// WrongSHA makes the Hub advertise a sha256 that the file's content does not have.
func (h *Hub) WrongSHA(id, path string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f := h.file(id, path)
	b, _ := hex.DecodeString(f.sha)
	b[0] ^= 0xff
	f.shown = hex.EncodeToString(b)
}

// Stall makes content downloads of a file (requests without a Range, or with an open-ended one)
// stop after at bytes, the connection held open, until the client goes away; header reads
// (bytes=A-B) are served. Started is signalled each time a download reaches the stall.
func (h *Hub) Stall(id, path string, at int64) (started <-chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f := h.file(id, path)
	f.stall = at
	f.stalls = make(chan struct{}, 16)
	return f.stalls
}

// Commit returns a repo's commit.
func (h *Hub) Commit(id string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.repos[strings.ToLower(id)].commit
}

// SHA256 returns a file's real sha256.
func (h *Hub) SHA256(id, path string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.file(id, path).sha
}

// RangeRequests counts content requests that carried a Range header.
func (h *Hub) RangeRequests() int64 { return h.rangeRequests.Load() }

// ContentAuthorized counts content-host requests that carried an Authorization header; the
// token must never reach that host, so it stays 0.
func (h *Hub) ContentAuthorized() int64 { return h.cdnAuth.Load() }

// ContentRequests counts requests to the content host.
func (h *Hub) ContentRequests() int64 { return h.cdnRequests.Load() }

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_ = json.NewEncoder(w).Encode(v)
}

func hubError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("X-Error-Code", code)
	w.Header().Set("X-Error-Message", msg)
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

func (r *repo) modelJSON() map[string]any {
	var gated any = false
	if r.token != "" {
		gated = "manual"
	}
	sib := []map[string]string{}
	for _, p := range r.sortedPaths() {
		sib = append(sib, map[string]string{"rfilename": p})
	}
	org, _, _ := strings.Cut(r.id, "/")
	return map[string]any{
		"_id": fmt.Sprintf("%x", sha1.Sum([]byte(r.id)))[:24], "id": r.id, "modelId": r.id, "author": org, "sha": r.commit,
		"private": false, "disabled": false, "gated": gated, "downloads": 1000 + len(r.files), "likes": 7,
		"tags": []string{"gguf", "text-generation"}, "library_name": "gguf",
		"lastModified": "2026-11-01T10:00:00.000Z", "createdAt": "2026-10-01T10:00:00.000Z",
		"siblings": sib,
	}
}

func (r *repo) sortedPaths() []string {
	out := make([]string, 0, len(r.files))
	for p := range r.files {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

func (h *Hub) serveAPI(w http.ResponseWriter, req *http.Request) {
	p := req.URL.Path
	switch {
	case p == "/api/models":
		h.search(w, req)
	case strings.HasPrefix(p, "/api/models/"):
		h.modelAPI(w, req, strings.TrimPrefix(p, "/api/models/"))
	case strings.Contains(p, "/resolve/"):
		h.resolve(w, req)
	default:
		hubError(w, http.StatusNotFound, "EntryNotFound", "not found")
	}
}

func (h *Hub) search(w http.ResponseWriter, req *http.Request) {
	q := strings.ToLower(req.URL.Query().Get("search"))
	h.mu.Lock()
	var out []map[string]any
	for _, r := range h.repos {
		if strings.Contains(strings.ToLower(r.id), q) {
			m := r.modelJSON()
			delete(m, "siblings")
			delete(m, "sha")
			out = append(out, m)
		}
	}
	h.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i]["id"].(string) < out[j]["id"].(string) })
	if n, err := strconv.Atoi(req.URL.Query().Get("limit")); err == nil && n < len(out) {
		out = out[:n]
	}
	if out == nil {
		out = []map[string]any{}
	}
	writeJSON(w, out)
}

func (h *Hub) modelAPI(w http.ResponseWriter, req *http.Request, rest string) {
	parts := strings.Split(rest, "/")
	if len(parts) < 2 {
		hubError(w, http.StatusNotFound, "RepoNotFound", "Repository not found")
		return
	}
	h.mu.Lock()
	r := h.repos[strings.ToLower(parts[0]+"/"+parts[1])]
	endless := r != nil && r.endless
	h.mu.Unlock()
	if endless && len(parts) >= 4 && parts[2] == "tree" {
		h.serveEndless(w, req)
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if r == nil {
		hubError(w, http.StatusNotFound, "RepoNotFound", "Repository Not Found for url: "+req.URL.String()+".")
		return
	}
	switch {
	case len(parts) == 2, len(parts) == 4 && parts[2] == "revision":
		writeJSON(w, r.modelJSON())
	case len(parts) >= 4 && parts[2] == "tree":
		var out []map[string]any
		for _, p := range r.sortedPaths() {
			f := r.files[p]
			size := f.size
			if f.listed != nil {
				size = *f.listed
			}
			out = append(out, map[string]any{"type": "file", "oid": gitOID(f), "size": size, "path": p,
				"lfs": map[string]any{"oid": f.shown, "size": size, "pointerSize": 134}})
		}
		writeJSON(w, out)
	default:
		hubError(w, http.StatusNotFound, "EntryNotFound", "not found")
	}
}

// gitOID is a stand-in git blob id of the LFS pointer.
func gitOID(f *file) string {
	s := sha1.Sum([]byte("version https://git-lfs.github.com/spec/v1\noid sha256:" + f.shown + "\nsize " + strconv.FormatInt(f.size, 10) + "\n"))
	return hex.EncodeToString(s[:])
}

// resolve serves /ORG/REPO/resolve/REV/PATH: 302 to the content host with the Hub's headers.
func (h *Hub) resolve(w http.ResponseWriter, req *http.Request) {
	// The escaped path, so that a revision or file name holding "/" or ".." reads as it was sent.
	before, after, _ := strings.Cut(strings.TrimPrefix(req.URL.EscapedPath(), "/"), "/resolve/")
	revEsc, pathEsc, _ := strings.Cut(after, "/")
	rev, _ := url.PathUnescape(revEsc)
	path, _ := url.PathUnescape(pathEsc)
	h.mu.Lock()
	r := h.repos[strings.ToLower(before)]
	var f *file
	if r != nil {
		f = r.files[path]
	}
	var token, commit string
	if r != nil {
		token, commit = r.token, r.commit
	}
	h.mu.Unlock()
	switch {
	case r == nil:
		hubError(w, http.StatusNotFound, "RepoNotFound", "Repository Not Found for url: "+req.URL.String()+".")
		return
	case rev != "main" && rev != commit:
		hubError(w, http.StatusNotFound, "RevisionNotFound", "Invalid rev id: "+rev)
		return
	case token != "" && req.Header.Get("Authorization") == "":
		hubError(w, http.StatusUnauthorized, "GatedRepo", "Access to model "+r.id+" is restricted. You must have access to it and be authenticated to access it. Please log in.")
		return
	case token != "" && req.Header.Get("Authorization") != "Bearer "+token:
		hubError(w, http.StatusForbidden, "GatedRepo", "Access to model "+r.id+" is restricted and you are not in the authorized list.")
		return
	case f == nil:
		hubError(w, http.StatusNotFound, "EntryNotFound", path+" does not exist on \"main\"")
		return
	}
	h.mu.Lock()
	shown, size := f.shown, f.size
	h.mu.Unlock()
	hd := w.Header()
	hd.Set("X-Repo-Commit", commit)
	hd.Set("X-Linked-Etag", `"`+shown+`"`)
	hd.Set("X-Linked-Size", strconv.FormatInt(size, 10))
	hd.Set("ETag", `"`+gitOID(f)+`"`)
	hd.Set("Location", h.cdn.URL+"/blobs/"+strings.ToLower(before)+"/"+url.PathEscape(commit)+"/"+url.PathEscape(path))
	w.WriteHeader(http.StatusFound)
}
