// Package envconfig declares every LLAMATRAY_* environment variable Llamatray reads, each once with
// what it does; they are read only through it (Var.Get, or Var.From for a command's own
// environment), and the README lists them all (a test holds it to that).
package envconfig

import (
	"os"
	"strings"
)

// Var is one LLAMATRAY_* environment variable.
type Var string

// The variables, in the README's order.
const (
	ReleasesURL Var = "LLAMATRAY_RELEASES_URL"
	UpdateURL   Var = "LLAMATRAY_UPDATE_URL"
	BodyTimeout Var = "LLAMATRAY_BODY_TIMEOUT"
	IdleTimeout Var = "LLAMATRAY_IDLE_TIMEOUT"
	PeerAPIKey  Var = "LLAMATRAY_PEER_API_KEY"
	WorkerToken Var = "LLAMATRAY_WORKER_TOKEN"
	Autostart   Var = "LLAMATRAY_AUTOSTART"
	CPUProfile  Var = "LLAMATRAY_CPUPROFILE"
	NVMLLib     Var = "LLAMATRAY_NVML_LIB"
	SimMachine  Var = "LLAMATRAY_SIM_MACHINE"
)

// All is every variable with its description, in the README's order.
var All = []struct {
	Var         Var
	Description string
}{
	{ReleasesURL, "replaces https://api.github.com/repos/ggml-org/llama.cpp/releases, where llama-server installs read llama.cpp's releases (a mirror; tests)"},
	{UpdateURL, "replaces https://api.github.com/repos/llamatray/llamatray/releases, where the update check reads Llamatray's releases (a mirror; tests)"},
	{BodyTimeout, "how long a request body may take to arrive, a Go duration (default 2m; 408 after)"},
	{IdleTimeout, "how long a client's idle keep-alive connection stays open, a Go duration (default 2m)"},
	{PeerAPIKey, "the peer's API key for `llamatray peer add` without --api-key, out of the process list"},
	{WorkerToken, "the pairing token of `llamatray worker` without --token or --token-file, out of the process list"},
	{Autostart, "set to 1 by the login item: a Llamatray started at login stays in the tray unless something needs attention"},
	{CPUProfile, "a file `llamatray serve` writes a CPU profile of its whole run into (make bench)"},
	{NVMLLib, "the NVML library loaded instead of the NVIDIA driver's (a path; tests use a stand-in)"},
	{SimMachine, "a simulated machine's description file (JSON), measured instead of this one (make sim)"},
}

// Get is v's value in this process's environment, spaces trimmed; "" when unset.
func (v Var) Get() string { return v.From(os.Getenv) }

// From is v's value as getenv gives it (a command's own environment), spaces trimmed.
func (v Var) From(getenv func(string) string) string { return strings.TrimSpace(getenv(string(v))) }

// URL is v's value without a trailing slash, else def.
func (v Var) URL(def string) string {
	if u := strings.TrimSuffix(v.Get(), "/"); u != "" {
		return u
	}
	return def
}
