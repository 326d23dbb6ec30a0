package ghreleases

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// LlamatrayRepo is Llamatray's own repository: NewRepo(LlamatrayRepo) stands in for the releases
// that router/update reads (LLAMATRAY_UPDATE_URL takes its Base).
const LlamatrayRepo = "llamatray/llamatray"

// listFaults are the hostile answers of the releases list ("List releases") a test switches on;
// the first one set wins. They count and announce every list request too.
type listFaults struct {
	// ListBody, when set, is the whole answer to the list (200, JSON's content type): garbage, a
	// JSON object in place of the array, anything.
	ListBody atomic.Pointer[[]byte]
	// ListStatus, when set, answers the list with that status and GitHub's error document (403:
	// the rate limit's message).
	ListStatus atomic.Int32
	// ListEndless, when set, answers the list with an array of releases that never ends, until
	// the client goes away or the server is closed.
	ListEndless atomic.Bool
	// ListStall, when set, answers the list not at all (not even its headers) until the client
	// goes away or the server is closed.
	ListStall atomic.Bool

	lists     atomic.Int64  // list requests received
	listedMu  sync.Mutex    // guards listedCh's creation
	listedCh  chan struct{} // one token per list request, dropped when full
	userAgent atomic.Value  // the User-Agent of the last list request (string)
}

// Lists counts the list requests received.
func (s *Server) Lists() int64 { return s.lists.Load() }

// Listed delivers a token for each list request (up to 64 not yet received are kept).
func (s *Server) Listed() <-chan struct{} { return s.listed() }

// LastUserAgent is the User-Agent header of the last list request.
func (s *Server) LastUserAgent() string {
	v, _ := s.userAgent.Load().(string)
	return v
}

func (s *Server) listed() chan struct{} {
	s.listedMu.Lock()
	defer s.listedMu.Unlock()
	if s.listedCh == nil {
		s.listedCh = make(chan struct{}, 64)
	}
	return s.listedCh
}

// SetFlags marks release tag a draft and/or a pre-release. It reports whether the release exists.
func (s *Server) SetFlags(tag string, draft, prerelease bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.releases {
		if s.releases[i].TagName == tag {
			s.releases[i].Draft, s.releases[i].Prerelease = draft, prerelease
			return true
		}
	}
	return false
}

// SetHTMLURL makes the API list release tag with html_url u (a hostile feed's link: javascript:,
// http:, another host). It reports whether the release exists.
func (s *Server) SetHTMLURL(tag, u string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.releases {
		if s.releases[i].TagName == tag {
			s.releases[i].HTMLURL = u
			return true
		}
	}
	return false
}

// listFault counts a list request and answers it when a fault is on; it reports whether it did.
func (s *Server) listFault(w http.ResponseWriter, r *http.Request) bool {
	s.lists.Add(1)
	s.userAgent.Store(r.Header.Get("User-Agent"))
	select {
	case s.listed() <- struct{}{}:
	default:
	}
	switch {
	case s.ListBody.Load() != nil:
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Write(*s.ListBody.Load())
	case s.ListStatus.Load() != 0:
		code := int(s.ListStatus.Load())
		msg := http.StatusText(code)
		if code == http.StatusForbidden {
			msg = "API rate limit exceeded for 127.0.0.1. (But here's the good news: Authenticated requests get a higher rate limit. Check out the documentation for more details.)"
		}
		writeJSON(w, code, map[string]string{"message": msg, "documentation_url": "https://docs.github.com/rest/overview/resources-in-the-rest-api#rate-limiting", "status": strconv.Itoa(code)})
	case s.ListStall.Load():
		s.hold(r)
	case s.ListEndless.Load():
		s.endless(w, r)
	default:
		return false
	}
	return true
}

// endless writes releases of one array, never closing it, until the client or the server goes.
func (s *Server) endless(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	one := `{"tag_name":"v0.0.1","name":"v0.0.1","draft":false,"prerelease":false,"html_url":"` +
		s.srv.URL + `/` + s.repo + `/releases/tag/v0.0.1","body":"` + strings.Repeat("x", 4000) + `","assets":[]},`
	w.Write([]byte("["))
	for {
		select {
		case <-r.Context().Done():
			return
		case <-s.quit:
			return
		default:
		}
		if _, err := w.Write([]byte(one)); err != nil {
			return
		}
	}
}
