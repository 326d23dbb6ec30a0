package service

import "github.com/llamatray/llamatray/router/engine"

// The engine's state, waits, events and budget as the service hands them to its surfaces (the app
// above all, which imports the service and never the engine). These are aliases: the engine's own
// types and constants under the service's name, never a second definition.

// ModelStatus is a model's state as the engine keeps it; view.Model carries it with the catalog's entry.
type ModelStatus = engine.ModelStatus

// State is a model's lifecycle state.
type State = engine.State

// The model states: unloaded → loading → loaded ⇄ sleeping → stopping → unloaded, plus failed.
const (
	StateUnloaded = engine.StateUnloaded
	StateLoading  = engine.StateLoading
	StateLoaded   = engine.StateLoaded
	StateSleeping = engine.StateSleeping
	StateStopping = engine.StateStopping
	StateFailed   = engine.StateFailed
)

// WaitReason says why a model's queued requests wait; WaitModel is a model it waits on.
type (
	WaitReason = engine.WaitReason
	WaitModel  = engine.WaitModel
)

// The kinds of waits the app tells apart.
const (
	WaitLoading  = engine.WaitLoading
	WaitStopping = engine.WaitStopping
	WaitBusy     = engine.WaitBusy
	WaitBehind   = engine.WaitBehind
)

// Event is a change the service reports (Subscribe).
type Event = engine.Event

// The kinds of events the app reacts to.
const (
	EventState    = engine.EventState
	EventPressure = engine.EventPressure
)

// Budget is the memory the engine plans with.
type Budget = engine.Budget
