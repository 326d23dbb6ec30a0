package httpapi

import (
	"net/http"
	"time"

	"github.com/llamatray/llamatray/router/engine"
)

// modelList is the GET /models and /v1/models document. Its "data" entries keep the OpenAI fields
// (id, object, created, owned_by) typed as the SDKs expect, plus llama.cpp router-style status.
type modelList struct {
	Object string       `json:"object"`
	Data   []modelEntry `json:"data"`
}

// modelEntry is one model of the list.
type modelEntry struct {
	ID      string      `json:"id"`
	Object  string      `json:"object"`
	OwnedBy string      `json:"owned_by"`
	Created int64       `json:"created"`
	Aliases []string    `json:"aliases"`
	Status  modelStatus `json:"status"`
	Meta    *modelMeta  `json:"meta"` // null when the catalog no longer has the model
	// As llama.cpp's router gives them:
	Tags          []string        `json:"tags"`
	Architecture  entryModalities `json:"architecture"`
	ContextLength int             `json:"context_length"` // training context, 0 when unknown
}

// entryModalities are what a model takes and gives.
type entryModalities struct {
	Input  []string `json:"input_modalities"`
	Output []string `json:"output_modalities"`
}

// modelStatus is the engine's view of one model.
type modelStatus struct {
	Value               string     `json:"value"` // unloaded, loading, loaded, sleeping, stopping, failed
	ActiveRequests      int        `json:"active_requests"`
	Queued              int        `json:"queued"`
	MemoryBytes         int64      `json:"memory_bytes"`
	MemoryEstimateBytes int64      `json:"memory_estimate_bytes"`
	LastUsed            *time.Time `json:"last_used"`
	PID                 int        `json:"pid"`
	Port                int        `json:"port"`   // 0 when the child is on a unix socket
	Socket              string     `json:"socket"` // the child's unix socket, "" on TCP
	ExitCode            *int       `json:"exit_code"`
	Pinned              bool       `json:"pinned"`
	Draining            bool       `json:"draining"`
	Error               string     `json:"error"`
	NextRetry           *time.Time `json:"next_retry"`
	UnloadAt            *time.Time `json:"unload_at"`
	Progress            float64    `json:"progress"`
	Args                []string   `json:"args"`
}

// modelMeta is the catalog's view of one model file.
type modelMeta struct {
	Name          string `json:"name"`
	Architecture  string `json:"architecture"`
	Parameters    int64  `json:"parameters"`
	Quantization  string `json:"quantization"`
	SizeBytes     int64  `json:"size_bytes"`
	ContextLength int    `json:"context_length"`
	ChatTemplate  bool   `json:"chat_template"`
	Path          string `json:"path"`
	Splits        int    `json:"splits"`
	Mmproj        string `json:"mmproj"`
}

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
func statusJSON(st engine.ModelStatus) modelStatus {
	return modelStatus{
		Value:               string(st.State),
		ActiveRequests:      st.Active,
		Queued:              st.Queued,
		MemoryBytes:         st.MemoryBytes,
		MemoryEstimateBytes: st.EstimateBytes,
		LastUsed:            timePtr(st.LastUsed),
		PID:                 st.PID,
		Port:                st.Port,
		Socket:              st.Socket,
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
func (rt *Server) entry(st engine.ModelStatus) modelEntry {
	e := modelEntry{
		ID:           st.ID,
		Object:       "model",
		OwnedBy:      "llamatray",
		Created:      rt.o.StartTime.Unix(),
		Aliases:      orEmpty(st.Aliases),
		Status:       statusJSON(st),
		Tags:         []string{},
		Architecture: entryModalities{Input: []string{"text"}, Output: []string{"text"}},
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
	e.ContextLength = m.ContextLength
	if m.Mmproj != "" {
		e.Architecture.Input = append(e.Architecture.Input, "image")
	}
	e.Meta = &modelMeta{
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

// listModels serves GET /models and GET /v1/models: every catalog model with its state;
// ?reload=1 scans the model folders first.
func (rt *Server) listModels(w http.ResponseWriter, r *http.Request) {
	if err := rt.reload(r); err != nil {
		writeError(w, r, err)
		return
	}
	ms := rt.o.Engine.Models()
	list := modelList{Object: "list", Data: make([]modelEntry, 0, len(ms))}
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
