//go:build headless

package main

import "github.com/llamatray/llamatray/router/cli"

// desktop is nil in a headless build: `llamatray` without a command says to run `llamatray serve`.
func desktop() cli.Desktop { return nil }
