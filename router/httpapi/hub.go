package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/llamatray/llamatray/router/catalog"
	"github.com/llamatray/llamatray/router/download"
	"github.com/llamatray/llamatray/router/engine"
	"github.com/llamatray/llamatray/router/hub"
	"github.com/llamatray/llamatray/router/proxy"
	"github.com/llamatray/llamatray/router/wire"
)

// HubOptions enable models from the Hugging Face Hub: POST /models (pull), DELETE /models
// (remove), /api/hub/search, /api/hub/files and /api/hub/pulls, and ORG/REPO:QUANT names that
// are not on disk yet.
type HubOptions struct {
	Manager *hub.Manager
	// AutoPull starts a pull when a request names an ORG/REPO:QUANT that is not on disk.
	AutoPull bool
	// Params are the load parameters a new model would get, for the fit badges.
	Params func() catalog.EstimateParams
	// Rescan rescans the model folders (after a removal), before the answer is sent.
	Rescan func()
	// Installs, when set, adds the llama-server install to GET /api/downloads.
	Installs Installs
}

func (srv *Server) hubRoutes(m *mux.Router) {
	if srv.o.Hub == nil || srv.o.Hub.Manager == nil {
		return
	}
	m.HandleFunc("/models", srv.pullModel).Methods(http.MethodPost)
	m.HandleFunc("/models", srv.removeModel).Methods(http.MethodDelete)
	m.HandleFunc("/api/hub/search", srv.hubSearch).Methods(http.MethodGet)
	m.HandleFunc("/api/hub/files", srv.hubFiles).Methods(http.MethodGet)
	m.HandleFunc("/api/hub/pulls", srv.hubPulls).Methods(http.MethodGet)
	srv.downloadRoutes(m)
}

// notPulledError says a request named an ORG/REPO:QUANT that is not on this machine: a model
// unknown here (it unwraps to *engine.UnknownModelError), told how to pull it.
type notPulledError struct{ name string }

func (e *notPulledError) Unwrap() error { return &engine.UnknownModelError{Name: e.name} }

func (e *notPulledError) Error() string {
	return fmt.Sprintf("model %q is not on this machine: download it with `llamatray pull %s`, or POST /models {\"model\": %q}, or set auto_pull = true", e.name, e.name, e.name)
}

// pullingError says the model a request named is being downloaded.
type pullingError struct{ st hub.PullStatus }

func (e *pullingError) Error() string {
	pct := 0.0
	if e.st.Progress.Total > 0 {
		pct = 100 * float64(e.st.Progress.Done) / float64(e.st.Progress.Total)
	}
	return fmt.Sprintf("model %q is downloading (%.0f%%); retry when it is done", e.st.Model, pct)
}

// hubAPIError maps the Hub's errors to responses; errorFor asks it first.
func hubAPIError(err error) (apiError, bool) {
	var (
		np   *notPulledError
		pe   *pullingError
		he   *hub.Error
		disk *download.SpaceError
		sum  *hub.ChecksumError
	)
	switch {
	case errors.As(err, &np):
		return apiError{Status: http.StatusNotFound, Type: "invalid_request_error", Code: "model_not_found", Message: np.Error()}, true
	case errors.As(err, &pe):
		return apiError{Status: http.StatusServiceUnavailable, Type: "server_error", Code: "model_downloading", Message: pe.Error(), RetryAfter: 10 * time.Second}, true
	case errors.As(err, &he) && he.Gated():
		return apiError{Status: he.Status, Type: "authentication_error", Code: "hub_gated_repo", Message: he.Error()}, true
	case errors.As(err, &he) && he.NotFound():
		return apiError{Status: http.StatusNotFound, Type: "invalid_request_error", Code: "hub_not_found", Message: he.Error()}, true
	case errors.As(err, &he):
		return apiError{Status: http.StatusBadGateway, Type: "server_error", Code: "hub_error", Message: he.Error()}, true
	case errors.Is(err, hub.ErrUnreachable):
		return apiError{Status: http.StatusBadGateway, Type: "server_error", Code: "hub_unreachable", Message: err.Error()}, true
	case errors.Is(err, hub.ErrUnsafe), errors.Is(err, hub.ErrTooLarge), errors.As(err, new(*hub.NotGGUFError)):
		return apiError{Status: http.StatusBadGateway, Type: "server_error", Code: "hub_answer_refused", Message: err.Error()}, true
	case errors.Is(err, hub.ErrNoSuchQuant):
		return apiError{Status: http.StatusNotFound, Type: "invalid_request_error", Code: "quant_not_found", Message: err.Error()}, true
	case errors.As(err, &disk):
		return apiError{Status: http.StatusInsufficientStorage, Type: "server_error", Code: "insufficient_disk_space", Message: disk.Error()}, true
	case errors.As(err, new(*hub.NotPulledError)), errors.As(err, new(errHubOff)):
		return apiError{Status: http.StatusConflict, Type: "invalid_request_error", Code: "not_a_hub_model", Message: err.Error()}, true
	case errors.As(err, &sum):
		return apiError{Status: http.StatusBadGateway, Type: "server_error", Code: "checksum_mismatch", Message: sum.Error()}, true
	}
	return apiError{}, false
}

// resolveHub explains an unknown name that is an ORG/REPO:QUANT: downloading, or not pulled.
// Other errors pass through.
func (srv *Server) resolveHub(name string, err error) error {
	if srv.o.Hub == nil || srv.o.Hub.Manager == nil || !isUnknown(err) || !hub.LooksLikeRef(name) {
		return err
	}
	if st, ok := srv.o.Hub.Manager.Status(name); ok && st.State == hub.StateDownloading {
		return &pullingError{st}
	}
	return &notPulledError{name}
}

// resolveRequest resolves the model of a model-routed request. With auto_pull on, a POST naming an
// ORG/REPO:QUANT that is not on disk starts its download (GETs never do: a page could make a
// browser send them cross-site).
func (srv *Server) resolveRequest(r *http.Request, name string) (string, error) {
	id, err := srv.resolve(name)
	var np *notPulledError
	if err == nil || !errors.As(err, &np) || !srv.o.Hub.AutoPull || r.Method != http.MethodPost {
		return id, err
	}
	ref, perr := hub.ParseRef(name)
	if perr != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	st, serr := srv.o.Hub.Manager.Start(ctx, ref)
	if serr != nil {
		return "", serr
	}
	srv.log.Info("auto_pull started a download", "model", st.Model)
	return "", &pullingError{st}
}

// pullModel serves POST /models {"model": "ORG/REPO[:QUANT]"}: 202 once the download started
// (progress on /models/events), 200 when the model is already on disk.
func (srv *Server) pullModel(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model string `json:"model"`
		// HFToken is a Hub token for this pull only (`llamatray pull` sends the one in its shell);
		// it is sent to the Hub's host alone and never logged.
		HFToken string `json:"hf_token"`
	}
	if err := srv.readJSON(w, r, &req); err != nil {
		writeError(w, r, err)
		return
	}
	if req.Model == "" {
		req.Model = r.URL.Query().Get("model")
	}
	if req.Model == "" {
		writeError(w, r, errModelRequired)
		return
	}
	ref, err := hub.ParsePasted(req.Model)
	if err != nil {
		wire.Write(w, http.StatusBadRequest, apiError{Type: "invalid_request_error", Code: "invalid_model_name", Message: err.Error()}.doc())
		return
	}
	if ref.Quant != "" && srv.o.Catalog != nil {
		if m, ok := srv.o.Catalog.Lookup(ref.String()); ok && m.HubName != "" {
			wire.Write(w, http.StatusOK, wire.PullAnswer{Success: true, Model: m.HubName, ID: m.ID, Status: hub.StateDownloaded})
			return
		}
	}
	st, err := srv.o.Hub.Manager.StartWithToken(r.Context(), ref, strings.TrimSpace(req.HFToken))
	if err != nil {
		writeError(w, r, err)
		return
	}
	d := pullJSON(st)
	wire.Write(w, http.StatusAccepted, wire.PullAnswer{Success: true, Model: st.Model, Status: st.State, Download: &d})
}

// removeModel serves DELETE /models {"model"} (or ?model=): it cancels a running pull of that
// name, or unloads a pulled model (its in-flight requests finish first) and deletes its files
// from the Hub cache (blobs that nothing else uses). Models that are plain files elsewhere are
// not deleted.
func (srv *Server) removeModel(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("model")
	var req struct {
		Model string `json:"model"`
	}
	if err := srv.readJSON(w, r, &req); err != nil {
		writeError(w, r, err)
		return
	}
	if req.Model != "" {
		name = req.Model
	}
	if name == "" {
		writeError(w, r, errModelRequired)
		return
	}
	m := srv.o.Hub.Manager
	if st, ok := m.Status(name); ok && st.State == hub.StateDownloading {
		m.Cancel(name)
		end, err := m.Wait(r.Context(), name)
		if err != nil {
			writeError(w, r, err)
			return
		}
		wire.Write(w, http.StatusOK, wire.RemoveAnswer{Success: true, Model: end.Model, Status: end.State, Removed: []string{}})
		return
	}
	id, err := srv.resolve(name)
	if err != nil {
		writeError(w, r, err)
		return
	}
	ans, err := srv.removePulled(r, id)
	if err != nil {
		writeError(w, r, err)
		return
	}
	wire.Write(w, http.StatusOK, ans)
}

// isUnknown says err is a model that is not there (one not pulled included), rather than, say, one
// being pulled.
func isUnknown(err error) bool { return errors.As(err, new(*engine.UnknownModelError)) }

// hubSearch serves GET /api/hub/search?q=TEXT[&limit=N]: GGUF repos on the Hub (403 cross-site).
func (srv *Server) hubSearch(w http.ResponseWriter, r *http.Request) {
	if err := outbound(r); err != nil {
		writeError(w, r, err)
		return
	}
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	if q == "" {
		wire.Write(w, http.StatusBadRequest, apiError{Type: "invalid_request_error", Code: "query_required", Message: "q (the text to search for) is missing"}.doc())
		return
	}
	limit := 30
	fmt.Sscan(r.URL.Query().Get("limit"), &limit)
	repos, err := srv.o.Hub.Manager.Client().Search(r.Context(), q, min(max(limit, 1), 100))
	if err != nil {
		writeError(w, r, err)
		return
	}
	wire.Write(w, http.StatusOK, map[string]any{"object": "list", "data": repos})
}

// hubFiles serves GET /api/hub/files?repo=ORG/REPO[&fit=false]: the repo's quants with sizes
// and, unless fit=false, fit badges from the GGUF headers read with range requests (403 cross-site).
func (srv *Server) hubFiles(w http.ResponseWriter, r *http.Request) {
	if err := outbound(r); err != nil {
		writeError(w, r, err)
		return
	}
	repo := strings.TrimSpace(r.URL.Query().Get("repo"))
	if repo == "" {
		wire.Write(w, http.StatusBadRequest, apiError{Type: "invalid_request_error", Code: "repo_required", Message: "repo (ORG/REPO) is missing"}.doc())
		return
	}
	c := srv.o.Hub.Manager.Client()
	l, err := c.Files(r.Context(), repo)
	if err != nil {
		writeError(w, r, err)
		return
	}
	var params catalog.EstimateParams
	if srv.o.Hub.Params != nil {
		params = srv.o.Hub.Params()
	}
	var downloaded func(string) bool
	if srv.o.Catalog != nil {
		downloaded = func(name string) bool { _, ok := srv.o.Catalog.Lookup(name); return ok }
	}
	room := engine.RoomOf(srv.o.Engine.Budget(), srv.o.Engine.Models())
	quants := c.Badges(r.Context(), l, params, room, downloaded, r.URL.Query().Get("fit") != "false")
	wire.Write(w, http.StatusOK, map[string]any{"repo": l.Repo, "commit": l.Commit, "gated": l.Gated, "quants": quants})
}

func pullJSON(st hub.PullStatus) wire.Pull {
	files := make([]wire.PullFile, len(st.Progress.Files))
	for i, f := range st.Progress.Files {
		files[i] = wire.PullFile{Path: f.Path, Done: f.Done, Total: f.Total}
	}
	return wire.Pull{Model: st.Model, Status: st.State, BytesDone: st.Progress.Done, BytesTotal: st.Progress.Total,
		BytesPerSecond: st.Progress.Rate, ETASeconds: st.Progress.Left.Seconds(), File: st.Progress.File, Files: files,
		Error: st.Error, Started: st.Started.UTC()}
}

// hubPulls serves GET /api/hub/pulls: this instance's pulls, newest first.
func (srv *Server) hubPulls(w http.ResponseWriter, r *http.Request) {
	list := srv.o.Hub.Manager.List()
	out := wire.PullList{Object: "list", Data: make([]wire.Pull, len(list))}
	for i, st := range list {
		out.Data[i] = pullJSON(st)
	}
	wire.Write(w, http.StatusOK, out)
}

// pullEventLine renders one pull event as an SSE data block.
func pullEventLine(ev hub.Event) []byte {
	d := wire.DownloadEvent{Time: ev.Time.UTC(), Kind: "download", State: ev.State, Message: ev.Error, Pull: pullJSON(ev.PullStatus)}
	b, _ := json.Marshal(d)
	return proxy.SSEEvent("", b)
}

// removePulled unloads model id (its in-flight requests finish first) and deletes its files from
// the Hub cache (hub.RemovePulled). A model that is not a Hub pull is refused (*hub.NotPulledError).
func (srv *Server) removePulled(r *http.Request, id string) (wire.RemoveAnswer, error) {
	if srv.o.Hub == nil || srv.o.Hub.Manager == nil {
		return wire.RemoveAnswer{}, errHubOff{id}
	}
	cm, _ := srv.o.Catalog.Lookup(id)
	if _, ok := hub.Pulled(cm); !ok {
		return wire.RemoveAnswer{}, &hub.NotPulledError{ID: id, Path: cm.Path}
	}
	if err := srv.o.Engine.Unload(r.Context(), id, false); err != nil && !isUnknown(err) {
		return wire.RemoveAnswer{}, err
	}
	removed, err := hub.RemovePulled(cm)
	if err != nil {
		return wire.RemoveAnswer{}, err
	}
	if srv.o.Hub.Rescan != nil {
		srv.o.Hub.Rescan()
	}
	srv.log.Info("model removed", "model", id, "paths", len(removed))
	return wire.RemoveAnswer{Success: true, ID: id, Model: cm.HubName, Removed: wire.List(removed)}, nil
}

// errHubOff refuses a removal while Hub downloads are off.
type errHubOff struct{ id string }

func (e errHubOff) Error() string {
	return fmt.Sprintf("model %q cannot be deleted here: Hub downloads are off", e.id)
}
