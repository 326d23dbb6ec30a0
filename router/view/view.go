// Package view is the one view of a model that every surface shows — the HTTP API, the tray, the
// models window and the CLI: the engine's state of the model, its catalog entry, the memory a load
// needs (for the context it is configured with) and that context size. The service builds it
// (service.Service.Models) and the surfaces read it; Wire encodes it as the API's JSON.
package view

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/llamatray/llamatray/router/catalog"
	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/engine"
	"github.com/llamatray/llamatray/router/wire"
)

// Model is one model as every surface shows it.
type Model struct {
	// ModelStatus is the engine's state. Its EstimateBytes is what a load needs for the configured
	// context: the footprint learned in an earlier run, else the catalog's estimate.
	engine.ModelStatus
	Meta    *catalog.Model // the catalog entry; nil when the catalog no longer has the model
	CtxSize int            // the context size it runs with: the configured one, else the trained one; 0 = unknown
	Tags    []string       // its configured tags (llama.cpp's --tags)
}

// Entry is the model's catalog entry; the zero entry when the catalog no longer has the model.
func (m Model) Entry() catalog.Model {
	if m.Meta == nil {
		return catalog.Model{}
	}
	return *m.Meta
}

// Source gives the views; the service is one.
type Source interface {
	// Models is every model, sorted by ID.
	Models() []Model
	// Model is one model by ID or alias.
	Model(name string) (Model, error)
}

// Engine is what a Builder reads from the engine; *engine.Engine is one.
type Engine interface {
	Models() []engine.ModelStatus
	Model(name string) (engine.ModelStatus, error)
}

// Catalog is what a Builder reads from the catalog; *catalog.Catalog is one. When it also lists its
// models (Models() []catalog.Model), the entries the engine has not picked up yet are shown too.
type Catalog interface {
	Lookup(name string) (catalog.Model, bool)
}

// Builder joins the engine's state with the catalog. It is the only place where that is done.
type Builder struct {
	Engine  Engine
	Catalog Catalog                  // nil → no catalog data
	CtxSize func(id string) int      // the configured context size; nil or 0 → the trained one
	Tags    func(id string) []string // the configured tags; nil → none
}

var _ Source = Builder{}

// Models is every model the engine knows, then the catalog entries it has not picked up yet (the
// engine follows the catalog a moment later), sorted by ID.
func (b Builder) Models() []Model {
	sts := b.Engine.Models()
	out := make([]Model, 0, len(sts))
	seen := make(map[string]bool, len(sts))
	for _, st := range sts {
		out = append(out, b.join(st))
		seen[st.ID] = true
	}
	if l, ok := b.Catalog.(interface{ Models() []catalog.Model }); ok {
		for _, cm := range l.Models() {
			if !seen[cm.ID] {
				out = append(out, b.join(pending(cm)))
			}
		}
	}
	slices.SortFunc(out, func(x, y Model) int { return strings.Compare(x.ID, y.ID) })
	return out
}

// Model is one model by ID or alias, as the engine resolves it.
func (b Builder) Model(name string) (Model, error) {
	st, err := b.Engine.Model(name)
	if err != nil {
		return Model{}, err
	}
	return b.join(st), nil
}

// pending is the engine state of a catalog entry the engine has not picked up yet: unloaded, needing
// what the catalog estimates (the file size when it could not estimate).
func pending(cm catalog.Model) engine.ModelStatus {
	need := cm.Estimate.RAM + cm.Estimate.VRAM
	if need <= 0 {
		need = cm.SizeBytes
	}
	return engine.ModelStatus{ID: cm.ID, Aliases: cm.Aliases, State: engine.StateUnloaded, Path: cm.Path, EstimateBytes: need}
}

func (b Builder) join(st engine.ModelStatus) Model {
	m := Model{ModelStatus: st}
	if b.Catalog != nil {
		if cm, ok := b.Catalog.Lookup(st.ID); ok {
			m.Meta = &cm
			if len(m.Aliases) == 0 {
				m.Aliases = cm.Aliases
			}
			m.Path = cmp.Or(m.Path, cm.Path)
		}
	}
	if b.CtxSize != nil {
		m.CtxSize = b.CtxSize(st.ID)
	}
	if b.Tags != nil {
		m.Tags = b.Tags(st.ID)
	}
	if m.CtxSize <= 0 && m.Meta != nil {
		m.CtxSize = m.Meta.ContextLength
	}
	return m
}

// Wire encodes the model as an entry of GET /models. started is the instance's start, the
// "created" time of a model whose file time is unknown.
func (m Model) Wire(started time.Time) wire.Model {
	e := wire.Model{
		ID:           m.ID,
		Object:       "model",
		OwnedBy:      "llamatray",
		Created:      started.Unix(),
		Aliases:      m.names(),
		Status:       Status(m.ModelStatus),
		Tags:         sortedSet(m.Tags, ""),
		Architecture: wire.Modalities{Input: []string{"text"}, Output: []string{"text"}},
		CtxSize:      m.CtxSize,
	}
	if m.Meta == nil {
		return e
	}
	e.ContextLength = m.Meta.ContextLength
	if m.Meta.Mmproj != "" {
		e.Architecture.Input = append(e.Architecture.Input, "image")
	}
	if !m.Meta.ModTime.IsZero() {
		e.Created = m.Meta.ModTime.Unix()
	}
	e.Meta = &wire.ModelMeta{
		Name:          m.Meta.Name,
		Architecture:  m.Meta.Architecture,
		Parameters:    m.Meta.Parameters,
		Quantization:  m.Meta.Quantization,
		SizeBytes:     m.Meta.SizeBytes,
		ContextLength: m.Meta.ContextLength,
		ChatTemplate:  m.Meta.ChatTemplate,
		Path:          m.Meta.Path,
		Splits:        m.Meta.Splits,
		Mmproj:        m.Meta.Mmproj,
		HubName:       m.Meta.HubName,
		FileID:        m.Meta.FileID,
		VariantOf:     m.Meta.VariantOf,
		Variant:       m.Meta.Variant,
		Draft:         m.Meta.Draft,
		DraftBytes:    m.Meta.Estimate.Draft,
		DraftError:    m.Meta.DraftError,
		EstimateError: m.Meta.EstimateError,
	}
	return e
}

// names is every name the model answers to besides its ID, sorted as llama.cpp's router lists a
// model's aliases: its aliases (configured, its file name's ID) and its names in an Ollama store.
func (m Model) names() []string {
	names := slices.Clone(m.Aliases)
	if m.Meta != nil {
		for _, o := range m.Meta.Ollama {
			names = append(names, o.Name)
		}
	}
	return sortedSet(names, m.ID)
}

// sortedSet is list sorted, without repeats or drop; never nil.
func sortedSet(list []string, drop string) []string {
	out := slices.DeleteFunc(slices.Clone(list), func(s string) bool { return s == drop })
	slices.Sort(out)
	return wire.List(slices.Compact(out))
}

// Status encodes an engine state as the "status" object of the API.
func Status(st engine.ModelStatus) wire.ModelStatus {
	return wire.ModelStatus{
		Value:               string(st.State),
		ActiveRequests:      st.Active,
		Queued:              st.Queued,
		MemoryBytes:         st.MemoryBytes,
		MemoryEstimateBytes: st.EstimateBytes,
		LastUsed:            wire.Time(st.LastUsed),
		PID:                 st.PID,
		Port:                st.Port,
		Socket:              st.Socket,
		ExitCode:            st.ExitCode,
		Pinned:              st.Pinned,
		Draining:            st.Draining,
		Error:               st.Error,
		NextRetry:           wire.Time(st.NextRetry),
		UnloadAt:            wire.Time(st.UnloadAt),
		Progress:            st.Progress,
		Args:                wire.List(st.Args),
		Wait:                wireWait(st),
	}
}

// List encodes views as the GET /models document.
func List(ms []Model, started time.Time) wire.ModelList {
	l := wire.ModelList{Object: "list", Data: make([]wire.Model, 0, len(ms))}
	for _, m := range ms {
		l.Data = append(l.Data, m.Wire(started))
	}
	return l
}

// LoadingText is a load in progress in words, as every surface says it: "loading 40%", or
// "loading" before (or without) progress reports.
func LoadingText(progress float64) string {
	if progress > 0 {
		return fmt.Sprintf("loading %d%%", int(progress*100))
	}
	return "loading"
}

// WaitText is the one sentence that says why a model's queued requests wait, "" when none waits:
// "waiting: 2nd in line for 5.1 GiB (2.0 GiB free); beta will be unloaded when its 1 request ends",
// "waiting: every model is busy since 12:03:04 (alpha 2 requests, beta 1)", "loading 40%". The
// models window, the tray, the Try it pane, /models and the progress comments of a stream all show it.
func WaitText(st engine.ModelStatus) string {
	w := st.Wait
	if w == nil {
		return ""
	}
	line := "waiting: " + ordinal(w.Position) + " in line"
	need := line + " for " + config.HumanSize(w.Need) + " (" + freeText(w) + ")"
	switch w.Kind {
	case engine.WaitLoading:
		return LoadingText(st.Progress)
	case engine.WaitStopping:
		return line + "; its last run is stopping, then it loads again"
	case engine.WaitDraining:
		return "waiting: unloading once its " + ends(st.Active) + ", then it loads again"
	case engine.WaitMemory:
		return need + "; " + unloading(w.Victims)
	case engine.WaitBehind:
		return need + ", behind " + w.Behind
	case engine.WaitWorker:
		s := "waiting for worker " + w.Worker
		if len(w.Holders) > 0 {
			s += ", used by " + w.Holders[0].ID
		}
		if len(w.Victims) > 0 {
			s += ", which is being unloaded"
		}
		return s
	case engine.WaitBusy:
		if len(w.Victims) > 0 {
			return need + "; " + unloading(w.Victims)
		}
		s := "waiting: "
		if w.Position > 1 {
			s += ordinal(w.Position) + " in line; "
		}
		s += "every model is busy since " + clock(w.BusySince) + " (" + holders(w.Holders) + ")"
		if w.MaxLoaded > 0 {
			s += fmt.Sprintf("; max_loaded %d reached", w.MaxLoaded)
		}
		if !w.DrainAt.IsZero() {
			s += "; busy models drain for it at " + clock(w.DrainAt)
		}
		return s
	}
	return line
}

// freeText is what is free where the load is short: each GPU device it needs more of than is free
// there, else RAM.
func freeText(w *engine.WaitReason) string {
	var short []string
	for _, d := range slices.Sorted(maps.Keys(w.NeedGPU)) {
		if n := w.NeedGPU[d]; n > w.FreeGPU[d] {
			short = append(short, fmt.Sprintf("%s free of its %s on %s", config.HumanSize(w.FreeGPU[d]), config.HumanSize(n), d))
		}
	}
	return cmp.Or(strings.Join(short, ", "), config.HumanSize(w.Free)+" free")
}

// unloading says which models are unloaded for it and when: "beta will be unloaded when its 1
// request ends", "beta is being unloaded".
func unloading(vs []engine.WaitModel) string {
	var parts []string
	for _, v := range vs {
		if v.Active > 0 {
			parts = append(parts, v.ID+" will be unloaded when its "+ends(v.Active))
		} else {
			parts = append(parts, v.ID+" is being unloaded")
		}
	}
	return cmp.Or(strings.Join(parts, ", "), "memory is being freed")
}

// ends is "1 request ends" or "3 requests end".
func ends(n int) string {
	if n == 1 {
		return "1 request ends"
	}
	return fmt.Sprintf("%d requests end", n)
}

// requests is "1 request" or "3 requests".
func requests(n int) string {
	if n == 1 {
		return "1 request"
	}
	return fmt.Sprintf("%d requests", n)
}

// holders is "alpha 2 requests, beta 1, gamma loading".
func holders(hs []engine.WaitModel) string {
	var parts []string
	counted := false
	for _, h := range hs {
		var what string
		switch {
		case h.Active > 0 && !counted:
			what, counted = requests(h.Active), true
		case h.Active > 0:
			what = fmt.Sprint(h.Active)
		case h.Pinned:
			what = "pinned"
		default:
			what = string(h.State)
		}
		parts = append(parts, h.ID+" "+what)
	}
	return cmp.Or(strings.Join(parts, ", "), "none can be unloaded")
}

func ordinal(n int) string {
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return fmt.Sprintf("%d%s", n, suffix)
}

// clock is a time of today as people read it, in local time.
func clock(t time.Time) string { return t.Local().Format("15:04:05") }

// wireWait encodes the reason as the "wait" object of a model's status.
func wireWait(st engine.ModelStatus) *wire.Wait {
	w := st.Wait
	if w == nil {
		return nil
	}
	return &wire.Wait{
		Text:        WaitText(st),
		Kind:        string(w.Kind),
		Position:    w.Position,
		Since:       w.Since.UTC(),
		NeedBytes:   w.Need,
		NeedDevices: orEmptyMap(w.NeedGPU),
		FreeBytes:   w.Free,
		FreeDevices: orEmptyMap(w.FreeGPU),
		Victims:     wireModels(w.Victims),
		Holders:     wireModels(w.Holders),
		BusySince:   wire.Time(w.BusySince),
		DrainAt:     wire.Time(w.DrainAt),
		MaxLoaded:   w.MaxLoaded,
		Behind:      w.Behind,
		Worker:      w.Worker,
	}
}

func wireModels(ms []engine.WaitModel) []wire.WaitModel {
	out := make([]wire.WaitModel, 0, len(ms))
	for _, m := range ms {
		out = append(out, wire.WaitModel{ID: m.ID, State: string(m.State), ActiveRequests: m.Active, Pinned: m.Pinned})
	}
	return out
}

func orEmptyMap(m map[string]int64) map[string]int64 {
	if m == nil {
		return map[string]int64{}
	}
	return m
}

// PathLike reports names that can only be file paths, never a model's ID or alias.
func PathLike(name string) bool {
	if strings.ContainsAny(name, "\x00\\") || strings.HasPrefix(name, "/") || strings.HasPrefix(name, "~") ||
		strings.HasPrefix(name, "./") || (len(name) >= 2 && name[1] == ':') {
		return true
	}
	for _, seg := range strings.Split(name, "/") {
		if seg == ".." || seg == "." {
			return true
		}
	}
	return false
}
