package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/llamatray/llamatray/router/engine"
	"github.com/llamatray/llamatray/router/hub"
	"github.com/llamatray/llamatray/router/proxy"
	"github.com/llamatray/llamatray/router/wire"
)

// What llama.cpp's router (llama-server --models-dir) answers that its clients rely on, answered the
// same way: GET /models/sse, GET /models?reload=1, ?autoload= on model-routed requests and the
// router's own GET /props. The README's table lists every router endpoint.

// routerPropsJSON is GET /props without a model: llama.cpp's router fields, then Llamatray's own.
type routerPropsJSON struct {
	Role           string   `json:"role"`
	MaxInstances   int      `json:"max_instances"` // 0: no cap on loaded models
	ModelsAutoload bool     `json:"models_autoload"`
	ModelAlias     string   `json:"model_alias"`
	ModelPath      string   `json:"model_path"`
	DefaultGenSet  struct { // a router has no generation settings of its own
		Params *struct{} `json:"params"`
		NCtx   int       `json:"n_ctx"`
	} `json:"default_generation_settings"`
	UISettings       struct{} `json:"ui_settings"`
	BuildInfo        string   `json:"build_info"`
	CORSProxyEnabled bool     `json:"cors_proxy_enabled"`
	DefaultModel     string   `json:"default_model"`
}

// props serves GET/POST /props: with a model it is the child's, without one the router's own.
func (srv *Server) props(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("model") != "" || r.Method != http.MethodGet {
		srv.modelRoute(w, r)
		return
	}
	wire.Write(w, http.StatusOK, routerPropsJSON{
		Role:           "router",
		MaxInstances:   srv.o.Engine.Budget().MaxLoaded,
		ModelsAutoload: !srv.o.NoModelsAutoload,
		ModelAlias:     "llamatray",
		ModelPath:      "none",
		BuildInfo:      "llamatray " + srv.o.Version,
		DefaultModel:   srv.o.DefaultModel,
	})
}

// reloadTimeout bounds the folder scan of GET /models?reload=1.
const reloadTimeout = time.Minute

// reload scans the model folders again when the request asks for it (?reload=1 or true), before
// the list is answered, as llama.cpp's router does. A cross-site request gets the list as it is.
func (srv *Server) reload(r *http.Request) error {
	if v := r.URL.Query().Get("reload"); v != "1" && v != "true" || srv.o.Reload == nil || crossSite(r) {
		return nil
	}
	ctx, cancel := context.WithTimeout(r.Context(), reloadTimeout)
	defer cancel()
	if err := srv.o.Reload(ctx); err != nil {
		return fmt.Errorf("reload the model list: %w", err)
	}
	return nil
}

// checkAutoload refuses a request whose model is not running when it must not start a load: with
// ?autoload=false (or 0), with models_autoload off unless it asks ?autoload=true (or 1), and a
// cross-site one (crossSite: an <img> of another site's page must not load models and evict the
// user's). A sleeping model is running (waking it is not a load).
func (srv *Server) checkAutoload(r *http.Request, id string) error {
	autoload := !srv.o.NoModelsAutoload
	switch queryValue(r.URL, "autoload") {
	case "false", "0":
		autoload = false
	case "true", "1":
		autoload = true
	}
	if autoload && !crossSite(r) {
		return nil
	}
	st, err := srv.o.Engine.Model(id)
	if err != nil {
		return err
	}
	if st.State != engine.StateLoaded && st.State != engine.StateSleeping {
		return errModelNotLoaded
	}
	return nil
}

// sseEventJSON is one GET /models/sse data line, in llama.cpp's router shape.
type sseEventJSON struct {
	Model string `json:"model"` // "*" for events about the whole list
	Event string `json:"event"` // model_status, status_change, models_reload
	Data  any    `json:"data,omitempty"`
}

// sseProgress is the loading progress of a status_change.
type sseProgress struct {
	Stages  []string `json:"stages"`
	Current string   `json:"current"`
	Value   float64  `json:"value"`
}

// sseStatus is the data of model_status and status_change events.
type sseStatus struct {
	Status   string       `json:"status"` // unloaded, loading, loaded, sleeping
	Progress *sseProgress `json:"progress,omitempty"`
	Info     *wire.Model  `json:"info,omitempty"`
	ExitCode *int         `json:"exit_code,omitempty"`
	Failed   bool         `json:"failed,omitempty"`
	Error    string       `json:"error,omitempty"`
}

// sseTranslator turns engine events into llama.cpp router events. It remembers what it last said of
// each model, so that an engine event that changes nothing a router client sees (a lease, a pin)
// sends nothing. It is used by one goroutine and needs no lock.
type sseTranslator struct {
	srv  *Server
	last map[string]sseStatus
}

func (t *sseTranslator) translate(ev engine.Event) []sseEventJSON {
	if ev.Kind == "catalog" || ev.Kind == "resync" {
		return []sseEventJSON{{Model: "*", Event: "models_reload"}}
	}
	if ev.Kind != "state" || ev.Model == "" {
		return nil
	}
	st, err := t.srv.o.Engine.Model(ev.Model)
	if err != nil {
		return nil
	}
	now := sseStatus{Status: string(ev.State)}
	switch ev.State {
	case engine.StateLoading:
		now.Progress = &sseProgress{Stages: []string{"text_model"}, Current: "text_model", Value: st.Progress}
	case engine.StateLoaded:
		if v, err := t.srv.views.Model(ev.Model); err == nil {
			e := v.Wire(t.srv.o.StartTime)
			now.Info = &e
		}
	case engine.StateUnloaded, engine.StateFailed:
		code := 0
		if st.ExitCode != nil {
			code = *st.ExitCode
		}
		now = sseStatus{Status: "unloaded", ExitCode: &code, Failed: ev.State == engine.StateFailed, Error: st.Error}
	case engine.StateSleeping:
	default: // stopping: llama.cpp's router says nothing until the model is unloaded
		return nil
	}
	prev, seen := t.last[ev.Model]
	if seen && prev.Status == now.Status && (now.Progress == nil || prev.Progress.Value == now.Progress.Value) {
		return nil
	}
	t.last[ev.Model] = now
	var out []sseEventJSON
	if now.Status == "loading" && prev.Status != "loading" {
		out = append(out, sseEventJSON{Model: ev.Model, Event: "model_status", Data: sseStatus{Status: "loading"}})
	}
	return append(out, sseEventJSON{Model: ev.Model, Event: "status_change", Data: now})
}

// pullSSE translates a Hub download's change: "downloading" with the bytes done as progress,
// "unloaded" with failed and the error when it failed. A finished download says nothing of its
// own: the catalog's models_reload follows.
func pullSSE(ev hub.Event) []sseEventJSON {
	var st sseStatus
	switch ev.State {
	case hub.StateDownloading:
		value := 0.0
		if ev.Progress.Total > 0 {
			value = float64(ev.Progress.Done) / float64(ev.Progress.Total)
		}
		st = sseStatus{Status: "downloading", Progress: &sseProgress{Stages: []string{"download"}, Current: "download", Value: value}}
	case hub.StateFailed, hub.StateCancelled:
		st = sseStatus{Status: "unloaded", Failed: ev.State == hub.StateFailed, Error: ev.Error}
	default:
		return nil
	}
	return []sseEventJSON{{Model: ev.Model, Event: "status_change", Data: st}}
}

// modelsSSE serves GET /models/sse: model state changes as llama.cpp's router sends them,
// `data: {"model","event","data"}`, Hub downloads among them.
func (srv *Server) modelsSSE(w http.ResponseWriter, r *http.Request) {
	srv.serveSSE(w, r, &sseTranslator{srv: srv, last: map[string]sseStatus{}}, "")
}

func (t *sseTranslator) engineEvent(ev engine.Event, _ time.Time) []byte {
	return appendSSE(nil, t.translate(ev))
}
func (t *sseTranslator) pullEvent(ev hub.Event) []byte { return appendSSE(nil, pullSSE(ev)) }
func (t *sseTranslator) due(time.Time, bool) []byte    { return nil }
func (t *sseTranslator) next() (time.Time, bool)       { return time.Time{}, false }

// appendSSE appends events as SSE data blocks.
func appendSSE(buf []byte, evs []sseEventJSON) []byte {
	for _, ev := range evs {
		b, _ := json.Marshal(ev)
		buf = append(buf, proxy.SSEEvent("", b)...)
	}
	return buf
}

// queryValue is u.Query().Get(key), without parsing a query that is empty (the usual request).
func queryValue(u *url.URL, key string) string {
	if u.RawQuery == "" {
		return ""
	}
	return u.Query().Get(key)
}
