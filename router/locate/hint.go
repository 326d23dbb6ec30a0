package locate

import (
	"runtime"
	"strings"
)

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
