//go:build !headless

package main

import (
	"context"
	"log/slog"

	"github.com/llamatray/llamatray/app"
	"github.com/llamatray/llamatray/router/cli"
	"github.com/llamatray/llamatray/router/config"
)

// desktop is the tray app (Fyne, cgo).
func desktop() cli.Desktop {
	return func(ctx context.Context, cfg config.Config, configPath string, log *slog.Logger) error {
		return app.Run(ctx, app.Options{Config: cfg, ConfigPath: configPath, Version: version, Logger: log})
	}
}
