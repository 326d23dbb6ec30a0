package httpapi

import (
	"net/url"
	"strings"
)

// maxModelSegments bounds how many path segments a model name in /upstream/... may take unescaped:
// ORG/REPO:QUANT takes two, a variant of it or a clash-qualified file name a few more.
const maxModelSegments = 4

// upstreamModel splits the escaped path after "/upstream/" into the model's name (unescaped) and
// the escaped path for the child. A model's name is one segment, escaped as
// "Org%2FRepo:Q8_0", or, written as it is ("/upstream/Org/Repo:Q8_0/health"), the most segments
// from the start that name a model. ok is false when the name does not unescape.
func (srv *Server) upstreamModel(tail string) (name, rest string, ok bool) {
	segs := strings.Split(tail, "/")
	for n := min(len(segs), maxModelSegments); n > 1; n-- {
		esc := strings.Join(segs[:n], "/")
		v, err := url.PathUnescape(esc)
		if err != nil {
			continue
		}
		if _, err := srv.o.Engine.Resolve(v); err == nil {
			return v, tail[len(esc):], true
		}
	}
	v, err := url.PathUnescape(segs[0])
	return v, tail[len(segs[0]):], err == nil
}
