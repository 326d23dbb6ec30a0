// Package locate finds the llama.cpp llama-server binary and reads its version.
//
// The search order is: the configured path, $LLAMA_SERVER, the build Llamatray installed (Env.Installed,
// from router/releases), beside the running executable (also
// its bundled llama-server folder and, on macOS, the app bundle's Contents/MacOS and
// Contents/Resources/llama-server), PATH, Homebrew (/opt/homebrew/bin, /usr/local/bin),
// ~/.local/bin, %LOCALAPPDATA%\Microsoft\WinGet\Links, /usr/bin. A desktop app started from a
// menu often gets a shorter PATH than a terminal, which is why the usual install folders are
// searched even when they are not in PATH.
package locate

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// Result is the llama-server chosen.
type Result struct {
	Path    string // the executable
	Source  string // where it was found: one of the Source constants
	Version string // what follows "version:" in `llama-server --version`, like "6123 (a1b2c3d)"
	Build   int    // llama.cpp build number from Version, 0 when it has none
}

// ErrNotFound is matched (errors.Is) by the error Find returns when no working llama-server
// was found by the automatic search.
var ErrNotFound = errors.New("llama-server not found")

// NotFoundError says the automatic search found no working llama-server.
type NotFoundError struct {
	Searched []string // every spot looked at, in order
	Broken   []error  // llama-servers that were found but did not answer --version
}

func (e *NotFoundError) Error() string {
	msg := "llama-server not found"
	if len(e.Broken) > 0 {
		var broken []string
		for _, err := range e.Broken {
			broken = append(broken, err.Error())
		}
		msg = "no working llama-server found: " + strings.Join(broken, "; ")
	}
	if len(e.Searched) > 0 {
		msg += " (looked in " + strings.Join(e.Searched, ", ") + ")"
	}
	return msg
}

// Is makes errors.Is(err, ErrNotFound) true.
func (e *NotFoundError) Is(target error) bool { return target == ErrNotFound }

// Find looks for llama-server in the order described in the package documentation and returns
// the first one that answers `llama-server --version` (each run bounded by 10 s). A configured
// path (or $LLAMA_SERVER) is the only one tried: when it is missing or does not run, the error
// names it (a *ChosenError). Otherwise a failure is a *NotFoundError.
func Find(ctx context.Context, configured string) (Result, error) {
	return FindWith(ctx, OSEnv(), configured)
}

// FindWith is Find in the environment e.
func FindWith(ctx context.Context, e Env, configured string) (Result, error) {
	found, searched, err := Candidates(e, configured)
	if err != nil {
		return Result{}, err
	}
	var broken []error
	timeout := cmp.Or(max(e.VersionTimeout, 0), DefaultVersionTimeout)
	for _, c := range found {
		v, err := runVersion(ctx, c.Path, timeout)
		if err == nil {
			return Result{Path: c.Path, Source: c.Source, Version: v, Build: buildNumber(v)}, nil
		}
		if c.Source == SourceConfig || c.Source == SourceEnv {
			return Result{}, &ChosenError{Source: c.Source, Path: c.Path, Reason: "did not run", Err: err}
		}
		if ctx.Err() != nil {
			return Result{}, fmt.Errorf("looking for llama-server: %w", ctx.Err())
		}
		broken = append(broken, err)
	}
	return Result{}, &NotFoundError{Searched: searched, Broken: broken}
}

// ReleasesURL is where llama.cpp publishes ready-made builds for every system.
const ReleasesURL = "https://github.com/ggml-org/llama.cpp/releases"

// InstallHint says how to install llama-server on this operating system, one way per line.
func InstallHint() string { return installHint(runtime.GOOS) }

func installHint(goos string) string {
	lines := []string{"Let Llamatray install llama.cpp's own build: llamatray llama-server install (or Install llama-server in the window),"}
	switch goos {
	case "darwin":
		lines = append(lines,
			"or install llama.cpp with Homebrew: brew install llama.cpp",
			"or MacPorts: sudo port install llama.cpp",
		)
	case "windows":
		lines = append(lines, "or install llama.cpp with WinGet: winget install llama.cpp")
	case "linux":
		lines = append(lines,
			"or install llama.cpp's llama-server:",
			"  Debian/Ubuntu: sudo apt install llama.cpp-tools (Debian unstable and newer releases only)",
			"  Fedora: sudo dnf install llama-cpp",
			"  Arch Linux: the llama.cpp package from the AUR (for example yay -S llama.cpp)",
			"  Homebrew: brew install llama.cpp",
		)
	default:
		lines = append(lines, "or install llama.cpp's llama-server from your system's packages,")
	}
	lines = append(lines,
		"or download a build from "+ReleasesURL+".",
		"Then press Look again in Llamatray's window (no restart is needed), or set llama_server in the configuration (or $LLAMA_SERVER) to its path.")
	return strings.Join(lines, "\n")
}

// rpcServerNames are llama.cpp's names for its RPC worker: Debian's, then upstream's.
var rpcServerNames = []string{"ggml-rpc-server", "rpc-server"}

// RPCServer finds llama.cpp's RPC server, the program a lent machine runs behind its link: given
// when it is not empty (a path or a name on PATH), else beside the llama-server that Find finds (or
// beside the file its link points to), then in Debian's /usr/libexec/<triplet>/llama/bin, then on
// PATH. The error names every place it looked and how to get it.
func RPCServer(ctx context.Context, given, llamaServer string) (string, error) {
	if given != "" {
		p, err := exec.LookPath(given)
		if err != nil {
			return "", fmt.Errorf("rpc-server %s: %w", given, err)
		}
		return p, nil
	}
	var looked, dirs []string
	exe := ""
	if runtime.GOOS == "windows" {
		exe = ".exe"
	}
	if llamaServer == "" {
		fctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		r, err := Find(fctx, "")
		cancel()
		if err != nil {
			looked = append(looked, "beside llama-server (none found: "+err.Error()+")")
		}
		llamaServer = r.Path
	}
	if llamaServer != "" {
		dirs = append(dirs, filepath.Dir(llamaServer))
		if real, err := filepath.EvalSymlinks(llamaServer); err == nil && filepath.Dir(real) != filepath.Dir(llamaServer) {
			dirs = append(dirs, filepath.Dir(real))
		}
	}
	if runtime.GOOS == "linux" {
		debian, _ := filepath.Glob("/usr/libexec/*/llama/bin")
		dirs = append(dirs, debian...)
	}
	for _, d := range dirs {
		for _, n := range rpcServerNames {
			p := filepath.Join(d, n+exe)
			if st, err := os.Stat(p); err == nil && !st.IsDir() {
				return p, nil
			}
			looked = append(looked, p)
		}
	}
	for _, n := range rpcServerNames {
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
		looked = append(looked, n+" on PATH")
	}
	return "", fmt.Errorf("llama.cpp's RPC server not found; looked at: %s. Give it with --rpc-server PATH "+
		"(Debian: apt install llama.cpp-tools-extra libggml0-backend-rpc)", strings.Join(looked, ", "))
}
