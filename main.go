// Command llamatray serves the GGUF models on this computer through one HTTP endpoint, from a tray
// app or headless (`llamatray serve`). This file only wires the pieces together.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/llamatray/llamatray/app"
	"github.com/llamatray/llamatray/router/cli"
	"github.com/llamatray/llamatray/router/config"
)

// Set at build time with -ldflags "-X main.version=... -X main.commit=...".
var (
	version = "dev"
	commit  = ""
)

func main() {
	desktop := func(ctx context.Context, cfg config.Config, configPath string, log *slog.Logger) error {
		return app.Run(ctx, app.Options{Config: cfg, ConfigPath: configPath, Version: version, Logger: log})
	}
	os.Exit(cli.Main(os.Args[1:], cli.Build{Version: version, Commit: commit}, desktop))
}
