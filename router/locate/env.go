package locate

import (
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// DefaultVersionTimeout bounds one `llama-server --version` run.
const DefaultVersionTimeout = 10 * time.Second

// Env is everything the search reads from the machine. OSEnv returns the real one; tests
// replace fields to check the search order for any operating system on any host.
type Env struct {
	GOOS       string                            // operating system whose rules apply ("linux", "darwin", "windows", ...)
	Getenv     func(string) string               // environment lookup
	Executable func() (string, error)            // path of the running program
	LookPath   func(string) (string, error)      // PATH search, as exec.LookPath
	Stat       func(string) (fs.FileInfo, error) // file information, following symlinks
	HomeDir    string                            // the user's home folder, "" when unknown
	// Installed is the llama-server of the build Llamatray installed (router/releases), "" when none;
	// it is searched first after the configured path and $LLAMA_SERVER.
	Installed string

	// VersionTimeout bounds each `llama-server --version` run; 0 means DefaultVersionTimeout.
	VersionTimeout time.Duration
}

// OSEnv returns the environment of this process.
func OSEnv() Env {
	home, _ := os.UserHomeDir()
	return Env{
		GOOS:   runtime.GOOS,
		Getenv: os.Getenv,
		Executable: func() (string, error) {
			exe, err := os.Executable()
			if err != nil {
				return "", err
			}
			// A symlink such as /usr/local/bin/llamatray -> /opt/llamatray/llamatray should
			// find the llama-server installed beside the real file.
			if real, err := filepath.EvalSymlinks(exe); err == nil {
				return real, nil
			}
			return exe, nil
		},
		LookPath: exec.LookPath,
		Stat:     os.Stat,
		HomeDir:  home,
	}
}

// binaryName is the llama-server file name on e.GOOS.
func (e Env) binaryName() string {
	if e.GOOS == "windows" {
		return "llama-server.exe"
	}
	return "llama-server"
}

// join joins path elements with e.GOOS's separator.
func (e Env) join(elem ...string) string {
	switch {
	case e.GOOS == runtime.GOOS:
		return filepath.Join(elem...)
	case e.GOOS == "windows":
		parts := make([]string, 0, len(elem))
		for i, p := range elem {
			if i > 0 {
				p = strings.TrimLeft(p, `\/`)
			}
			if i < len(elem)-1 {
				p = strings.TrimRight(p, `\/`)
			}
			if p != "" {
				parts = append(parts, p)
			}
		}
		return strings.Join(parts, `\`)
	default:
		return path.Join(elem...)
	}
}

// dir returns all but the last element of p, with e.GOOS's separators.
func (e Env) dir(p string) string {
	switch {
	case e.GOOS == runtime.GOOS:
		return filepath.Dir(p)
	case e.GOOS == "windows":
		i := strings.LastIndexAny(p, `\/`)
		if i < 0 {
			return "."
		}
		return p[:i]
	default:
		return path.Dir(p)
	}
}

// isBareName reports whether p is a command name without any folder, like "llama-server".
func (e Env) isBareName(p string) bool {
	if e.GOOS == "windows" {
		return !strings.ContainsAny(p, `\/:`)
	}
	return !strings.Contains(p, "/")
}

// expandHome replaces a leading "~" (followed by a separator or nothing) with HomeDir.
func (e Env) expandHome(p string) string {
	if e.HomeDir == "" || !strings.HasPrefix(p, "~") {
		return p
	}
	rest := p[1:]
	switch {
	case rest == "":
		return e.HomeDir
	case rest[0] == '/' || (e.GOOS == "windows" && rest[0] == '\\'):
		return e.join(e.HomeDir, rest[1:])
	}
	return p
}

// sameFile reports whether a and b name the same path on e.GOOS (case-insensitive on Windows
// and macOS, whose usual file systems are).
func (e Env) sameFile(a, b string) bool {
	if e.GOOS == "windows" {
		a, b = strings.ReplaceAll(a, "/", `\`), strings.ReplaceAll(b, "/", `\`)
	}
	if e.GOOS == "windows" || e.GOOS == "darwin" {
		return strings.EqualFold(a, b)
	}
	return a == b
}
