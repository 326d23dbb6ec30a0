//go:build !darwin

package releases

import (
	"context"
	"log/slog"
)

// clearQuarantine is needed on macOS only.
func clearQuarantine(context.Context, string, *slog.Logger) {}
