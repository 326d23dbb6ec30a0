package httpapi

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/llamatray/llamatray/router/proxy"
	"github.com/llamatray/llamatray/router/releases"
	"github.com/llamatray/llamatray/router/wire"
)

// LlamaServers installs and switches llama.cpp release builds of llama-server (router/releases);
// the service implements it, and re-finds llama-server after every change so new loads use it.
type LlamaServers interface {
	// InstalledBuilds lists the builds in Llamatray's folder, newest first.
	InstalledBuilds() ([]releases.Build, error)
	// PlanBuild says which archive of a release would be installed, and why, without downloading.
	PlanBuild(ctx context.Context, req releases.Request) (releases.Release, releases.Choice, error)
	// InstallBuild downloads, verifies and unpacks a build and makes it the one in use.
	InstallBuild(ctx context.Context, req releases.Request, progress func(releases.Progress)) (releases.Build, error)
	// UseBuild makes an installed build (or "previous") the one in use.
	UseBuild(build string) (releases.Build, error)
}

// llamaServers serves GET /api/llama-server: the builds installed, and what a fresh install of the
// latest release (or ?build=) would pick, with the other archives that run here. Asking GitHub
// (?available, ?build=) cross-site is 403; the local listing is not.
func (srv *Server) llamaServers(w http.ResponseWriter, r *http.Request) {
	ls := srv.o.LlamaServers
	if ls == nil {
		writeError(w, r, errNotFound)
		return
	}
	q := r.URL.Query()
	askGitHub := q.Has("build") || q.Has("available")
	if err := outbound(r); err != nil && askGitHub {
		writeError(w, r, err)
		return
	}
	builds, err := ls.InstalledBuilds()
	if err != nil {
		writeError(w, r, err)
		return
	}
	out := releases.Listing{Builds: wire.List(builds)}
	if srv.o.Setup != nil {
		out.InUse = srv.o.Setup().LlamaServer
	}
	if askGitHub {
		rel, c, err := ls.PlanBuild(r.Context(), releases.Request{Build: q.Get("build"), Backend: q.Get("backend")})
		if err != nil {
			out.AvailableError = err.Error()
		} else {
			out.Available = releases.AvailableOf(rel, c)
		}
	}
	wire.Write(w, http.StatusOK, out)
}

// installLlamaServer serves POST /api/llama-server/install {"build": "latest"}. The answer is an
// event stream: "progress" events (releases.Progress: phase, build, asset, reason, bytes done and
// total), then one "done" event with the installed build, or one "error" event. An error before the
// first event (a bad body, another install running, no such release) is a plain JSON error instead.
// Closing the connection cancels the install, which leaves nothing behind.
func (srv *Server) installLlamaServer(w http.ResponseWriter, r *http.Request) {
	ls, req, ok := srv.llamaServerRequest(w, r)
	if !ok {
		return
	}
	es := &eventStream{w: w, rc: http.NewResponseController(w)}
	b, err := ls.InstallBuild(r.Context(), req, func(p releases.Progress) { es.send("progress", p) })
	switch {
	case err != nil && !es.begun:
		writeError(w, r, err)
	case err != nil:
		e, _ := failed(r, err)
		es.send("error", e.doc())
	default:
		es.send("done", b)
	}
}

// eventStream writes server-sent events, starting the response on the first one. It is used by the
// handler's goroutine only (the installer reports progress on its caller's goroutine).
type eventStream struct {
	w     http.ResponseWriter
	rc    *http.ResponseController
	begun bool
}

func (es *eventStream) send(event string, v any) {
	b, _ := json.Marshal(v)
	if !es.begun {
		startSSE(es.w)
		es.begun = true
	}
	es.w.Write(proxy.SSEEvent(event, b))
	es.rc.Flush()
}

// useLlamaServer serves POST /api/llama-server/use {"build": "b7100"} ("previous" rolls back).
func (srv *Server) useLlamaServer(w http.ResponseWriter, r *http.Request) {
	ls, req, ok := srv.llamaServerRequest(w, r)
	if !ok {
		return
	}
	if req.Build == "" {
		writeError(w, r, errBuildRequired)
		return
	}
	b, err := ls.UseBuild(req.Build)
	if err != nil {
		writeError(w, r, err)
		return
	}
	wire.Write(w, http.StatusOK, b)
}

// llamaServerRequest is the installer and the body of a POST to /api/llama-server/...; ok is false
// when it answered the request itself (404 without an installer, 400 for a bad body).
func (srv *Server) llamaServerRequest(w http.ResponseWriter, r *http.Request) (ls LlamaServers, req releases.Request, ok bool) {
	if ls = srv.o.LlamaServers; ls == nil {
		writeError(w, r, errNotFound)
		return nil, req, false
	}
	if err := srv.readJSON(w, r, &req); err != nil {
		writeError(w, r, err)
		return nil, req, false
	}
	return ls, req, true
}
