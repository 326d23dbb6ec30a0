package fakehub

import (
	"fmt"
	"net/http"
	"strings"
)

// The faults of a hostile or broken mirror (HF_ENDPOINT pointed at a server that is not the Hub):
// names that try to leave the cache, sizes that lie, listings that never end, ranges ignored.
// Names themselves need no switch: AddRepo publishes whatever repo paths it is given, "../x.gguf"
// or "a\nb.gguf" included, and the resolve and content endpoints serve them as sent.

// SetCommit makes the Hub name commit as the revision of main (and serve files under it).
func (h *Hub) SetCommit(id, commit string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.repos[strings.ToLower(id)].commit = commit
}

// ListSize makes the tree listing give size for a file (its content stays what it is).
func (h *Hub) ListSize(id, path string, size int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.file(id, path).listed = &size
}

// IgnoreRange makes content GETs of a file answer 200 with the whole file whatever Range asks,
// each answer cut after cutEvery bytes when cutEvery > 0.
func (h *Hub) IgnoreRange(id, path string, cutEvery int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f := h.file(id, path)
	f.ignoreRange, f.cutEvery = true, cutEvery
}

// EndlessTree makes a repo's tree listing an endless JSON array, sent until the client leaves.
func (h *Hub) EndlessTree(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.repos[strings.ToLower(id)].endless = true
}

// TreeBytes counts the bytes of endless tree listings sent so far.
func (h *Hub) TreeBytes() int64 { return h.treeBytes.Load() }

// serveEndless writes "[" and then file entries until writing fails (the client left).
func (h *Hub) serveEndless(w http.ResponseWriter, req *http.Request) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	n, _ := fmt.Fprint(w, "[")
	h.treeBytes.Add(int64(n))
	for i := 0; req.Context().Err() == nil; i++ {
		n, err := fmt.Fprintf(w, `{"type":"file","oid":"%040x","size":1,"path":"junk/%d.bin"},`, i, i)
		h.treeBytes.Add(int64(n))
		if err != nil {
			return
		}
	}
}
