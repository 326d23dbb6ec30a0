package app

import (
	"slices"
	"strings"
)

// sortModels orders models by ID, for the tests' fixed snapshots.
func sortModels(ms []Model) {
	slices.SortFunc(ms, func(a, b Model) int { return strings.Compare(a.ID, b.ID) })
}
