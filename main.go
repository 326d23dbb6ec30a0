// Command llamatray serves the GGUF models on this computer through one HTTP endpoint, from a tray
// app or headless (`llamatray serve`). This file only wires the pieces together; the tray app comes
// from main_desktop.go, and a build with the `headless` tag (main_headless.go) has none, so it needs
// no cgo or Fyne and cross-compiles anywhere Go does.
package main

import (
	"os"

	"github.com/llamatray/llamatray/router/cli"
)

// Set at build time with -ldflags "-X main.version=... -X main.commit=...".
var (
	version = "dev"
	commit  = ""
)

func main() {
	os.Exit(cli.Main(os.Args[1:], cli.Build{Version: version, Commit: commit}, desktop()))
}
