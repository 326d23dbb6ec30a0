package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/llamatray/llamatray/router/engine"
	"github.com/llamatray/llamatray/router/view"
	"github.com/llamatray/llamatray/router/wire"
)

// readJSON reads a management request's body (bounded) into v; an empty body leaves v as it is.
// A body that is not JSON of v's shape is errInvalidJSON.
func (srv *Server) readJSON(w http.ResponseWriter, r *http.Request, v any) error {
	body, err := srv.readBody(w, r)
	if err != nil || len(body) == 0 {
		return err
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("%w: %w", errInvalidJSON, err)
	}
	return nil
}

// manageTarget reads a management request and resolves its model: body "model", else ?model=.
func (srv *Server) manageTarget(w http.ResponseWriter, r *http.Request) (wire.ManageRequest, string, error) {
	var req wire.ManageRequest
	body, err := srv.readBody(w, r)
	if err != nil {
		return req, "", err
	}
	if len(body) > 0 {
		if _, err := scanBody(body); err != nil {
			return req, "", err
		}
		if err := json.Unmarshal(body, &req); err != nil {
			return req, "", fmt.Errorf("%w: %w", errInvalidJSON, err)
		}
	}
	if req.Model == "" {
		req.Model = r.URL.Query().Get("model")
	}
	if req.Model == "" {
		return req, "", errModelRequired
	}
	id, err := srv.resolve(req.Model)
	if err == nil {
		if info := infoFrom(r.Context()); info != nil {
			info.model = id
		}
	}
	return req, id, err
}

// loadModel serves POST /models/load, which waits until the model is ready or failed (?wait=false
// answers 202 as soon as the load started), and POST /models/unload, which drains the model (no
// new leases, in-flight requests finish) and stops its child ("force": true stops it at once).
func (srv *Server) loadModel(w http.ResponseWriter, r *http.Request) {
	req, id, err := srv.manageTarget(w, r)
	status := http.StatusOK
	switch wait := r.URL.Query().Get("wait"); {
	case err != nil:
	case r.URL.Path == "/models/unload":
		err = srv.o.Engine.Unload(r.Context(), id, req.Force)
	case wait == "false" || wait == "0":
		status, err = http.StatusAccepted, srv.o.Engine.StartLoad(id)
	default:
		err = srv.o.Engine.Load(r.Context(), id)
	}
	if err != nil {
		writeError(w, r, err)
		return
	}
	wire.Write(w, status, wire.ManageAnswer{Success: true, ID: id, Status: srv.statusOf(id)})
}

// pinModel serves POST /models/pin; "pinned" defaults to true. Through the service the pin is saved
// in the configuration, as the tray's is (see Options.Pin).
func (srv *Server) pinModel(w http.ResponseWriter, r *http.Request) {
	req, id, err := srv.manageTarget(w, r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	pinned := req.Pinned == nil || *req.Pinned
	pin := srv.o.Pin
	if pin == nil {
		pin = srv.o.Engine.SetPinned
	}
	if err := pin(id, pinned); err != nil {
		writeError(w, r, err)
		return
	}
	wire.Write(w, http.StatusOK, wire.PinAnswer{Success: true, ID: id, Pinned: pinned})
}

// statusOf is the model's status value, or null when the engine cannot say.
func (srv *Server) statusOf(id string) *wire.ModelStatus {
	st, err := srv.o.Engine.Model(id)
	if err != nil {
		return nil
	}
	ws := view.Status(st)
	return &ws
}

// modelLogs serves GET /models/logs?model=: the tail of the child's output.
func (srv *Server) modelLogs(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("model")
	if name == "" {
		writeError(w, r, errModelRequired)
		return
	}
	id, err := srv.resolve(name)
	if err != nil {
		writeError(w, r, err)
		return
	}
	infoFrom(r.Context()).model = id
	wire.Write(w, http.StatusOK, wire.Logs{ID: id, Lines: append([]string{}, srv.o.Engine.Logs(id)...)})
}

// health serves GET /health. "service" tells a Llamatray instance from a bare llama-server.
func (srv *Server) health(w http.ResponseWriter, r *http.Request) {
	wire.Write(w, http.StatusOK, wire.Health{Status: "ok", Service: "llamatray", Version: srv.o.Version})
}

// memoryJSON is the memory budget of /api/status.
func memoryJSON(b engine.Budget) wire.Memory {
	return wire.Memory{Limit: b.Limit, Configured: b.Configured, Used: b.Used, Free: b.Free, Reserve: b.Reserve,
		SystemTotal: b.SystemTotal, SystemAvailable: b.SystemAvailable, MaxLoaded: b.MaxLoaded, Loaded: b.Loaded}
}

// countsJSON counts the models of /api/status by state, with their requests.
func countsJSON(ms []engine.ModelStatus) wire.Counts {
	var c wire.Counts
	byState := map[engine.State]*int{engine.StateUnloaded: &c.Unloaded, engine.StateLoading: &c.Loading, engine.StateLoaded: &c.Loaded,
		engine.StateSleeping: &c.Sleeping, engine.StateStopping: &c.Stopping, engine.StateFailed: &c.Failed}
	for _, st := range ms {
		c.Total++
		if n := byState[st.State]; n != nil {
			*n++
		}
		c.ActiveRequests += st.Active
		c.Queued += st.Queued
		if st.Pinned {
			c.Pinned++
		}
	}
	return c
}

// apiStatus serves GET /api/status: version, uptime, memory budget, model counts, plus the
// service's setup (llama-server, config file, model folders).
func (srv *Server) apiStatus(w http.ResponseWriter, r *http.Request) {
	st := wire.Status{
		Service:       "llamatray",
		Version:       srv.o.Version,
		StartTime:     srv.o.StartTime.UTC().Format(time.RFC3339),
		UptimeSeconds: int64(time.Since(srv.o.StartTime).Seconds()),
		Listen:        srv.o.Listen,
		DefaultModel:  srv.o.DefaultModel,
		Memory:        memoryJSON(srv.o.Engine.Budget()),
		Models:        countsJSON(srv.o.Engine.Models()),
		Peers:         srv.peersWire(),
	}
	if srv.o.Setup != nil {
		setup := srv.o.Setup()
		st.Setup = &setup
	}
	wire.Write(w, http.StatusOK, st)
}

// listModels serves GET /models and GET /v1/models: every model with its state, as the service
// views it (router/view).
// ?reload=1 scans the model folders first, as llama.cpp's router does.
func (srv *Server) listModels(w http.ResponseWriter, r *http.Request) {
	if err := srv.reload(r); err != nil {
		writeError(w, r, err)
		return
	}
	l := view.List(srv.views.Models(), srv.o.StartTime)
	taken := make(map[string]bool, len(l.Data))
	for _, m := range l.Data {
		taken[m.ID] = true
	}
	l.Data = append(l.Data, srv.o.Peers.Listed(taken, srv.o.StartTime.Unix())...)
	wire.Write(w, http.StatusOK, l)
}

// getModel serves GET /v1/models/{model} (OpenAI "retrieve model"), by ID or alias.
func (srv *Server) getModel(w http.ResponseWriter, r *http.Request) {
	name, ok := muxVar(r, "model")
	if !ok {
		writeError(w, r, errNotFound)
		return
	}
	id, err := srv.resolve(name)
	if err != nil {
		if m, ok := srv.peerModel(name); ok && isUnknown(err) {
			wire.Write(w, http.StatusOK, m)
			return
		}
		writeError(w, r, err)
		return
	}
	m, err := srv.views.Model(id)
	if err != nil {
		writeError(w, r, err)
		return
	}
	wire.Write(w, http.StatusOK, m.Wire(srv.o.StartTime))
}

// peerModel is the entry of GET /v1/models/{model} for a peer's model, by its listed ID or its ref.
func (srv *Server) peerModel(name string) (wire.Model, bool) {
	taken := map[string]bool{}
	for _, m := range srv.views.Models() {
		taken[m.ID] = true
	}
	for _, m := range srv.o.Peers.Listed(taken, srv.o.StartTime.Unix()) {
		if m.ID == name || len(m.Aliases) > 0 && m.Aliases[0] == name {
			return m, true
		}
	}
	return wire.Model{}, false
}
