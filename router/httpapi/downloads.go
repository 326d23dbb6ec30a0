package httpapi

import (
	"net/http"
	"slices"
	"strings"

	"github.com/gorilla/mux"

	"github.com/llamatray/llamatray/router/hub"
	"github.com/llamatray/llamatray/router/wire"
)

// Installs is the llama-server install in progress (or the last that ended), as downloads, and
// how to cancel it; the service keeps it.
type Installs interface {
	Downloads() []wire.Download
	CancelInstall(build string) bool
}

// downloadRoutes declares GET /api/downloads and POST /api/downloads/{pause,resume,cancel}, with
// the Hub's routes (hubRoutes: the Hub is on).
func (srv *Server) downloadRoutes(m *mux.Router) {
	m.HandleFunc("/api/downloads", srv.downloads).Methods(http.MethodGet)
	m.HandleFunc("/api/downloads/{action:pause|resume|cancel}", srv.downloadAction).Methods(http.MethodPost)
}

// downloads serves GET /api/downloads: every download, the Hub's pulls and the llama-server
// install, those running first, then the newest first.
func (srv *Server) downloads(w http.ResponseWriter, r *http.Request) {
	var out []wire.Download
	for _, st := range srv.o.Hub.Manager.List() {
		out = append(out, modelDownload(st))
	}
	if srv.o.Hub.Installs != nil {
		out = append(out, srv.o.Hub.Installs.Downloads()...)
	}
	slices.SortStableFunc(out, func(a, b wire.Download) int {
		ra, rb := a.Status == hub.StateDownloading, b.Status == hub.StateDownloading
		switch {
		case ra && !rb:
			return -1
		case rb && !ra:
			return 1
		}
		return b.Started.Compare(a.Started)
	})
	wire.Write(w, http.StatusOK, wire.DownloadList{Object: "list", Data: wire.List(out)})
}

func modelDownload(st hub.PullStatus) wire.Download {
	d := wire.Download{Kind: "model", Name: st.Model, Status: st.State, BytesDone: st.Progress.Done, BytesTotal: st.Progress.Total,
		BytesPerSecond: st.Progress.Rate, ETASeconds: st.Progress.Left.Seconds(), Error: st.Error, Started: st.Started.UTC(), Actions: []string{}}
	switch st.State {
	case hub.StateDownloading:
		d.Actions = []string{"pause", "cancel"}
	case hub.StatePaused, hub.StateFailed:
		d.Actions = []string{"resume", "cancel"}
	}
	return d
}

// downloadAction serves POST /api/downloads/{pause,resume,cancel} {"name"}: pause keeps what came
// for a resume; resume goes on from it (after a restart too); cancel stops it and deletes what
// it left.
func (srv *Server) downloadAction(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name string `json:"name"`
	}
	if err := srv.readJSON(w, r, &req); err != nil {
		writeError(w, r, err)
		return
	}
	name := strings.TrimSpace(req.Name)
	if name == "" {
		wire.Write(w, http.StatusBadRequest, apiError{Type: "invalid_request_error", Code: "name_required", Message: `"name" (a download's name, from GET /api/downloads) is missing`}.doc())
		return
	}
	m := srv.o.Hub.Manager
	action := mux.Vars(r)["action"]
	st, known := m.Status(name)
	if !known {
		if action == "cancel" && srv.o.Hub.Installs != nil && srv.o.Hub.Installs.CancelInstall(name) {
			wire.Write(w, http.StatusOK, map[string]any{"success": true, "name": name, "status": "cancelled"})
			return
		}
		wire.Write(w, http.StatusNotFound, apiError{Type: "invalid_request_error", Code: "download_not_found", Message: "no download named " + name + "; GET /api/downloads lists them"}.doc())
		return
	}
	d := modelDownload(st)
	if !slices.Contains(d.Actions, action) {
		wire.Write(w, http.StatusConflict, apiError{Type: "invalid_request_error", Code: "download_" + st.State,
			Message: name + " is " + st.State + "; it can be: " + strings.Join(d.Actions, ", ")}.doc())
		return
	}
	switch action {
	case "pause":
		m.Pause(name)
		st, _ = m.Wait(r.Context(), name)
	case "resume":
		if err := outbound(r); err != nil {
			writeError(w, r, err)
			return
		}
		ref, err := hub.ParseRef(st.Model)
		if err == nil {
			st, err = m.Start(r.Context(), ref)
		}
		if err != nil {
			writeError(w, r, err)
			return
		}
	case "cancel":
		if _, err := m.Discard(name); err != nil {
			writeError(w, r, err)
			return
		}
		st.State, st.Error = hub.StateCancelled, ""
	}
	wire.Write(w, http.StatusOK, modelDownload(st))
}
