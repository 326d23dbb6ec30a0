package httpapi

import (
	"net/http"
	"time"

	"github.com/llamatray/llamatray/router/engine"
	"github.com/llamatray/llamatray/router/wire"
)

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// statusJSON converts an engine snapshot.
func statusJSON(st engine.ModelStatus) wire.ModelStatus {
	return wire.ModelStatus{
		Value:               string(st.State),
		ActiveRequests:      st.Active,
		Queued:              st.Queued,
		MemoryBytes:         st.MemoryBytes,
		MemoryEstimateBytes: st.EstimateBytes,
		LastUsed:            timePtr(st.LastUsed),
		PID:                 st.PID,
		Port:                st.Port,
		ExitCode:            st.ExitCode,
		Pinned:              st.Pinned,
		Draining:            st.Draining,
		Error:               st.Error,
		NextRetry:           timePtr(st.NextRetry),
		UnloadAt:            timePtr(st.UnloadAt),
		Progress:            st.Progress,
		Args:                orEmpty(st.Args),
	}
}

// entry builds the list entry of one model from the engine snapshot and the catalog.
func (rt *Server) entry(st engine.ModelStatus) wire.Model {
	e := wire.Model{
		ID:      st.ID,
		Object:  "model",
		OwnedBy: "llamatray",
		Created: rt.o.StartTime.Unix(),
		Aliases: orEmpty(st.Aliases),
		Status:  statusJSON(st),
	}
	if rt.o.Catalog == nil {
		return e
	}
	m, ok := rt.o.Catalog.Lookup(st.ID)
	if !ok {
		return e
	}
	if !m.ModTime.IsZero() {
		e.Created = m.ModTime.Unix()
	}
	if len(e.Aliases) == 0 {
		e.Aliases = orEmpty(m.Aliases)
	}
	e.Meta = &wire.ModelMeta{
		Name:          m.Name,
		Architecture:  m.Architecture,
		Parameters:    m.Parameters,
		Quantization:  m.Quantization,
		SizeBytes:     m.SizeBytes,
		ContextLength: m.ContextLength,
		ChatTemplate:  m.ChatTemplate,
		Path:          m.Path,
		Splits:        m.Splits,
		Mmproj:        m.Mmproj,
	}
	return e
}

// listModels serves GET /models and GET /v1/models: every catalog model with its state.
func (rt *Server) listModels(w http.ResponseWriter, r *http.Request) {
	ms := rt.o.Engine.Models()
	list := wire.ModelList{Object: "list", Data: make([]wire.Model, 0, len(ms))}
	for _, st := range ms {
		list.Data = append(list.Data, rt.entry(st))
	}
	writeJSON(w, http.StatusOK, list)
}

// getModel serves GET /v1/models/{model} (OpenAI "retrieve model"), by ID or alias.
func (rt *Server) getModel(w http.ResponseWriter, r *http.Request) {
	name, ok := muxVar(r, "model")
	if !ok {
		writeError(w, r, errNotFound)
		return
	}
	id, err := rt.resolve(name)
	if err != nil {
		writeError(w, r, err)
		return
	}
	st, err := rt.o.Engine.Model(id)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, rt.entry(st))
}
