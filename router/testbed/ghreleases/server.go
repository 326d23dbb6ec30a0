// Package ghreleases is a local stand-in for the part of GitHub's REST API that lists llama.cpp's
// releases, and for GitHub's asset downloads, serving real archives (.tar.gz and .zip) that wrap a
// llama-server (the test bed's fake, or the real one).
//
// The answers have the shapes GitHub documents; the fields the client relies on, and where they are
// documented:
//
//   - GET /repos/{owner}/{repo}/releases?per_page=N ("List releases",
//     https://docs.github.com/en/rest/releases/releases#list-releases): an array of releases, newest
//     first, at most per_page (default 30, at most 100).
//   - GET /repos/{owner}/{repo}/releases/latest ("Get the latest release", same page): the newest
//     release that is neither a draft nor a prerelease.
//   - GET /repos/{owner}/{repo}/releases/tags/{tag} ("Get a release by tag name", same page); 404 with
//     {"message": "Not Found", "documentation_url": ..., "status": "404"} when there is none.
//   - A release's tag_name (llama.cpp's build, "b7100"), draft, prerelease, published_at, html_url and
//     assets (same page, response schema).
//   - An asset's name, size, state ("uploaded"), content_type, browser_download_url and digest
//     ("sha256:<hex>", https://docs.github.com/en/rest/releases/assets#get-a-release-asset; GitHub's
//     changelog of 2025-06-03, "Releases now expose digests for release assets").
//   - browser_download_url (https://github.com/{owner}/{repo}/releases/download/{tag}/{name}) answers
//     with a 302 redirect to the storage host, which serves the bytes with a Content-Length.
//
// It can also be hostile, for the tests of what an install refuses: Add publishes any tag (state.json,
// ../x); the archive builders of hostile.go pack link chains, hard links through them and bombs; and
// faults a test switches on make downloads differ from the listing (Corrupt, CutAt, SetSize, Chunked)
// or stall (StallAt, StallHeaders).
//
// NewRepo serves another repository's releases the same way: Llamatray's own (LlamatrayRepo), which
// router/update reads; the faults of list.go make its list hostile (garbage, an error status, an
// endless body, no answer).
package ghreleases

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Repo is the repository whose releases are served.
const Repo = "ggml-org/llama.cpp"

// Server is the stand-in. Its Base is what LLAMATRAY_RELEASES_URL takes (LLAMATRAY_UPDATE_URL for
// a stand-in of Llamatray's own releases, NewRepo(LlamatrayRepo)).
type Server struct {
	Base string // http://127.0.0.1:PORT/repos/ggml-org/llama.cpp/releases
	srv  *httptest.Server
	repo string // owner/name whose releases are served

	listFaults // faults of the releases list (list.go)

	// Corrupt, when set, changes one byte of every download (the digest stays the published one).
	Corrupt atomic.Bool
	// CutAt, when above 0, closes the connection after that many bytes of every download.
	CutAt atomic.Int64
	// Chunked, when set, sends every download without a Content-Length (chunked), so that only the
	// listed size tells the client how much is to come.
	Chunked atomic.Bool
	// StallAt, when above 0, sends that many bytes of every download and then nothing more, holding
	// the connection open until the client goes away or the server is closed.
	StallAt atomic.Int64
	// StallHeaders, when set, answers no download at all (not even its headers) until the client goes
	// away or the server is closed.
	StallHeaders atomic.Bool

	mu       sync.Mutex // guards releases, blobs and nextID
	releases []release  // newest first
	blobs    map[int]blob
	nextID   int
	gets     atomic.Int64  // downloads started
	quit     chan struct{} // closed by Close: stalled downloads end
	closing  sync.Once     // closes quit once
}

type blob struct {
	name string
	data []byte
}

// release and asset are GitHub's JSON shapes, with the fields GitHub sends (see the package comment
// for the ones the client reads).
type release struct {
	URL         string    `json:"url"`
	HTMLURL     string    `json:"html_url"`
	AssetsURL   string    `json:"assets_url"`
	ID          int       `json:"id"`
	TagName     string    `json:"tag_name"`
	Target      string    `json:"target_commitish"`
	Name        string    `json:"name"`
	Draft       bool      `json:"draft"`
	Prerelease  bool      `json:"prerelease"`
	CreatedAt   time.Time `json:"created_at"`
	PublishedAt time.Time `json:"published_at"`
	Assets      []asset   `json:"assets"`
	TarballURL  string    `json:"tarball_url"`
	ZipballURL  string    `json:"zipball_url"`
	Body        string    `json:"body"`
}

type asset struct {
	URL                string    `json:"url"`
	ID                 int       `json:"id"`
	Name               string    `json:"name"`
	Label              string    `json:"label"`
	ContentType        string    `json:"content_type"`
	State              string    `json:"state"`
	Size               int64     `json:"size"`
	Digest             string    `json:"digest"`
	DownloadCount      int       `json:"download_count"`
	CreatedAt          time.Time `json:"created_at"`
	UpdatedAt          time.Time `json:"updated_at"`
	BrowserDownloadURL string    `json:"browser_download_url"`
}

// New starts a stand-in of llama.cpp's releases with no releases; call Add. Close it when done.
func New() *Server { return NewRepo(Repo) }

// NewRepo starts a stand-in of repository repo's ("owner/name") releases, with none yet.
func NewRepo(repo string) *Server {
	s := &Server{repo: repo, blobs: map[int]blob{}, nextID: 1000, quit: make(chan struct{})}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.Base = s.srv.URL + "/repos/" + repo + "/releases"
	return s
}

// Close stops the server (and ends the downloads it holds stalled).
func (s *Server) Close() {
	s.closing.Do(func() { close(s.quit) })
	// An answer the client refused midway (more bytes than listed) may still be writing: under Wine a
	// closed client socket does not always fail the server's write, so the connections are cut first.
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// Downloads counts the asset downloads started.
func (s *Server) Downloads() int64 { return s.gets.Load() }

// AssetName is the name llama.cpp gives the CPU (Metal on Apple silicon) build for this system, with
// ext ".tar.gz" or ".zip": llama-b7100-bin-ubuntu-x64.tar.gz, llama-b7100-bin-macos-arm64.tar.gz,
// llama-b7100-bin-win-cpu-x64.zip.
func AssetName(tag, ext string) string {
	osw := map[string]string{"linux": "ubuntu", "darwin": "macos", "windows": "win-cpu"}[runtime.GOOS]
	if osw == "" {
		osw = runtime.GOOS
	}
	arch := map[string]string{"amd64": "x64", "arm64": "arm64"}[runtime.GOARCH]
	if arch == "" {
		arch = runtime.GOARCH
	}
	return fmt.Sprintf("llama-%s-bin-%s-%s%s", tag, osw, arch, ext)
}

// Add publishes a release tag (newest so far) with the given assets (name → content); the digest
// of each is the sha256 of its content.
func (s *Server) Add(tag string, files map[string][]byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now().UTC().Truncate(time.Second)
	s.nextID++
	rid := s.nextID
	web := s.srv.URL + "/" + s.repo
	r := release{
		URL: s.Base + "/" + strconv.Itoa(rid), HTMLURL: web + "/releases/tag/" + tag, AssetsURL: s.Base + "/" + strconv.Itoa(rid) + "/assets",
		ID: rid, TagName: tag, Target: "master", Name: tag, CreatedAt: now, PublishedAt: now,
		TarballURL: s.srv.URL + "/repos/" + s.repo + "/tarball/" + tag, ZipballURL: s.srv.URL + "/repos/" + s.repo + "/zipball/" + tag,
	}
	for name, data := range files {
		s.nextID++
		sum := sha256.Sum256(data)
		ct := "application/zip"
		if strings.HasSuffix(name, ".tar.gz") {
			ct = "application/gzip"
		}
		r.Assets = append(r.Assets, asset{
			URL: s.Base + "/assets/" + strconv.Itoa(s.nextID), ID: s.nextID, Name: name, ContentType: ct, State: "uploaded",
			Size: int64(len(data)), Digest: "sha256:" + hex.EncodeToString(sum[:]), CreatedAt: now, UpdatedAt: now,
			BrowserDownloadURL: web + "/releases/download/" + url.PathEscape(tag) + "/" + url.PathEscape(name),
		})
		s.blobs[s.nextID] = blob{name: name, data: data}
	}
	s.releases = append([]release{r}, s.releases...)
}

// SetSize makes the API list release tag's asset name with size (0, negative, or other than its
// content's length: an asset that lies); the download still serves the content. It reports whether
// the asset exists.
func (s *Server) SetSize(tag, name string, size int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.releases {
		if s.releases[i].TagName != tag {
			continue
		}
		for j := range s.releases[i].Assets {
			if s.releases[i].Assets[j].Name == name {
				s.releases[i].Assets[j].Size = size
				return true
			}
		}
	}
	return false
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	api := "/repos/" + s.repo + "/releases"
	p := r.URL.Path
	switch {
	case p == api && s.listFault(w, r):
	case p == api:
		n := 30
		if v, err := strconv.Atoi(r.URL.Query().Get("per_page")); err == nil && v > 0 {
			n = min(v, 100)
		}
		s.mu.Lock()
		out := s.releases[:min(n, len(s.releases))]
		s.mu.Unlock()
		writeJSON(w, http.StatusOK, out)
	case p == api+"/latest":
		s.mu.Lock()
		var out *release
		for i := range s.releases {
			if !s.releases[i].Draft && !s.releases[i].Prerelease {
				out = &s.releases[i]
				break
			}
		}
		s.mu.Unlock()
		if out == nil {
			notFound(w, "get-the-latest-release")
			return
		}
		writeJSON(w, http.StatusOK, out)
	case strings.HasPrefix(p, api+"/tags/"):
		tag := strings.TrimPrefix(p, api+"/tags/")
		s.mu.Lock()
		var out *release
		for i := range s.releases {
			if s.releases[i].TagName == tag {
				out = &s.releases[i]
			}
		}
		s.mu.Unlock()
		if out == nil {
			notFound(w, "get-a-release-by-tag-name")
			return
		}
		writeJSON(w, http.StatusOK, out)
	case strings.HasPrefix(p, "/"+s.repo+"/releases/download/"):
		s.redirect(w, r, strings.TrimPrefix(r.URL.EscapedPath(), "/"+s.repo+"/releases/download/"))
	case strings.HasPrefix(p, "/storage/"):
		s.download(w, r, strings.TrimPrefix(p, "/storage/"))
	default:
		notFound(w, "")
	}
}

// redirect answers a browser_download_url as github.com does: 302 to the storage host. tagName is
// the escaped path's {tag}/{name}.
func (s *Server) redirect(w http.ResponseWriter, r *http.Request, tagName string) {
	etag, ename, _ := strings.Cut(tagName, "/")
	tag, err1 := url.PathUnescape(etag)
	name, err2 := url.PathUnescape(ename)
	if err1 != nil || err2 != nil {
		http.Error(w, "Not Found", http.StatusNotFound)
		return
	}
	s.mu.Lock()
	id := 0
	for _, rel := range s.releases {
		if rel.TagName == tag {
			for _, a := range rel.Assets {
				if a.Name == name {
					id = a.ID
				}
			}
		}
	}
	s.mu.Unlock()
	if id == 0 {
		http.Error(w, "Not Found", http.StatusNotFound)
		return
	}
	http.Redirect(w, r, s.srv.URL+"/storage/"+strconv.Itoa(id), http.StatusFound)
}

func (s *Server) download(w http.ResponseWriter, r *http.Request, idText string) {
	id, _ := strconv.Atoi(idText)
	s.mu.Lock()
	b, ok := s.blobs[id]
	s.mu.Unlock()
	if !ok {
		http.Error(w, "Not Found", http.StatusNotFound)
		return
	}
	s.gets.Add(1)
	if s.StallHeaders.Load() {
		s.hold(r)
		return
	}
	data := b.data
	if s.Corrupt.Load() && len(data) > 0 {
		data = append([]byte(nil), data...)
		data[len(data)/2] ^= 0xff
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	if !s.Chunked.Load() {
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	}
	w.Header().Set("Content-Disposition", "attachment; filename="+b.name)
	w.WriteHeader(http.StatusOK)
	if stall := s.StallAt.Load(); stall > 0 && stall < int64(len(data)) {
		w.Write(data[:stall])
		http.NewResponseController(w).Flush()
		s.hold(r)
		return
	}
	if cut := s.CutAt.Load(); cut > 0 && cut < int64(len(data)) {
		w.Write(data[:cut])
		http.NewResponseController(w).Flush()
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			conn.Close() // the client sees the connection end before Content-Length bytes
		}
		return
	}
	w.Write(data)
}

// hold keeps a stalled download's connection open, sending nothing, until the client goes away or
// the server is closed.
func (s *Server) hold(r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-s.quit:
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("X-GitHub-Api-Version-Selected", "2022-11-28")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func notFound(w http.ResponseWriter, anchor string) {
	doc := "https://docs.github.com/rest"
	if anchor != "" {
		doc = "https://docs.github.com/rest/releases/releases#" + anchor
	}
	writeJSON(w, http.StatusNotFound, map[string]string{"message": "Not Found", "documentation_url": doc, "status": "404"})
}
