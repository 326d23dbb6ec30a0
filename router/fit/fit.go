// Package fit judges whether a model's memory need fits this machine: the badges the Get-models
// views and a model's settings show ("fits", "fits after unload", "too large"), against the room
// the engine reports (Engine.Room). It imports nothing of the project but the size format.
package fit

import (
	"fmt"

	"github.com/llamatray/llamatray/router/config"
)

// Fit says whether a model would fit the memory budget.
type Fit string

// The fit badges.
const (
	Now         Fit = "fits"              // fits in the free budget now
	AfterUnload Fit = "fits_after_unload" // fits once idle (or, later, busy) models are unloaded
	TooLarge    Fit = "too_large"         // more than the whole budget of this machine
)

// Room is the memory budget a fit is judged against, as the engine reports it.
type Room struct {
	Limit int64 // the whole budget
	Free  int64 // not held by any model
	Idle  int64 // held by loaded models that serve nothing and are not pinned
}

// For judges a model that needs need bytes, and says why in words.
func For(need int64, r Room) (Fit, string) {
	switch {
	case need <= 0:
		return AfterUnload, "memory need unknown"
	case need > r.Limit:
		return TooLarge, fmt.Sprintf("needs %s, more than the %s budget of this machine", config.HumanSize(need), config.HumanSize(r.Limit))
	case need <= r.Free:
		return Now, fmt.Sprintf("needs %s, %s free", config.HumanSize(need), config.HumanSize(r.Free))
	case need <= r.Free+r.Idle:
		return AfterUnload, fmt.Sprintf("needs %s, fits after unloading idle models", config.HumanSize(need))
	default:
		return AfterUnload, fmt.Sprintf("needs %s, fits once busy models finish and unload", config.HumanSize(need))
	}
}
