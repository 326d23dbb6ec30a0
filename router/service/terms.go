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
	WaitKind   = engine.WaitKind
)

// The kinds of waits.
const (
	WaitLoading  = engine.WaitLoading
	WaitStopping = engine.WaitStopping
	WaitDraining = engine.WaitDraining
	WaitMemory   = engine.WaitMemory
	WaitBusy     = engine.WaitBusy
	WaitBehind   = engine.WaitBehind
)

// Event is a change the service reports (Subscribe); EventKind is what it is about and Cause why.
type (
	Event     = engine.Event
	EventKind = engine.EventKind
	Cause     = engine.Cause
)

// The kinds of events.
const (
	EventState    = engine.EventState
	EventLease    = engine.EventLease
	EventQueue    = engine.EventQueue
	EventCatalog  = engine.EventCatalog
	EventPressure = engine.EventPressure
	EventResync   = engine.EventResync
)

// Budget is the memory the engine plans with; DeviceBudget is one device's share of it.
type (
	Budget       = engine.Budget
	DeviceBudget = engine.DeviceBudget
)
