package locate

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
)

// Sources: where a llama-server was found (Result.Source).
const (
	SourceConfig    = "config"    // the llama_server setting
	SourceEnv       = "env"       // the LLAMA_SERVER environment variable
	SourceInstalled = "installed" // a build Llamatray installed from llama.cpp's releases
	SourceBundled   = "bundled"   // shipped beside Llamatray (installer folder or app bundle)
	SourcePath      = "PATH"      // found through PATH
	SourceHomebrew  = "homebrew"  // a Homebrew prefix
	SourceUser      = "user"      // ~/.local/bin
	SourceWinGet    = "winget"    // WinGet's command links
	SourceSystem    = "system"    // /usr/local/bin or /usr/bin
)

// place is one spot the automatic search looks at.
type place struct {
	path   string // a file path, or the command name when lookup is set
	source string
	lookup bool // resolve path with Env.LookPath
}

// places lists, in order, every spot the automatic search looks at (after the configured
// path and $LLAMA_SERVER). It only computes paths; nothing is checked.
func places(e Env) []place {
	name := e.binaryName()
	var out []place
	add := func(source string, elem ...string) {
		out = append(out, place{path: e.join(append(elem, name)...), source: source})
	}
	if e.Installed != "" {
		out = append(out, place{path: e.Installed, source: SourceInstalled})
	}

	if exe, err := e.Executable(); err == nil && exe != "" {
		dir := e.dir(exe)
		add(SourceBundled, dir)
		add(SourceBundled, dir, "llama-server") // a bundled folder with its libraries
		if e.GOOS == "darwin" && filepath.Base(dir) == "MacOS" && filepath.Base(e.dir(dir)) == "Contents" {
			add(SourceBundled, e.dir(dir), "Resources", "llama-server")
		}
	}

	out = append(out, place{path: name, source: SourcePath, lookup: true})

	switch e.GOOS {
	case "windows":
		if local := e.Getenv("LOCALAPPDATA"); local != "" {
			add(SourceWinGet, local, "Microsoft", "WinGet", "Links")
		}
		if pf := e.Getenv("ProgramFiles"); pf != "" {
			add(SourceWinGet, pf, "WinGet", "Links")
		}
	case "darwin":
		add(SourceHomebrew, "/opt/homebrew/bin")
		add(SourceHomebrew, "/usr/local/bin")
	case "linux":
		add(SourceHomebrew, "/home/linuxbrew/.linuxbrew/bin")
		add(SourceSystem, "/usr/local/bin")
	default:
		add(SourceSystem, "/usr/local/bin")
	}
	if e.GOOS != "windows" {
		if e.HomeDir != "" {
			add(SourceUser, e.HomeDir, ".local", "bin")
		}
		add(SourceSystem, "/usr/bin")
	}
	return out
}

// Candidate is one llama-server file found by the search, not yet run.
type Candidate struct {
	Path   string
	Source string
}

// Candidates returns the llama-servers the search would try, in order, without running any.
// When configured or $LLAMA_SERVER is set, it is the only candidate, and an error says why it
// cannot be used (it does not exist, is not executable, or is a folder without llama-server).
// searched lists every spot looked at, for messages.
func Candidates(e Env, configured string) (found []Candidate, searched []string, err error) {
	if configured != "" {
		c, err := explicit(e, configured, SourceConfig)
		return []Candidate{c}, []string{configured}, err
	}
	if v := e.Getenv("LLAMA_SERVER"); v != "" {
		c, err := explicit(e, v, SourceEnv)
		return []Candidate{c}, []string{"$LLAMA_SERVER=" + v}, err
	}
	for _, p := range places(e) {
		if p.lookup {
			searched = append(searched, "PATH")
		} else {
			searched = append(searched, p.path)
		}
		path, ok := e.resolve(p)
		if !ok || slices.ContainsFunc(found, func(c Candidate) bool { return e.sameFile(c.Path, path) }) {
			continue
		}
		found = append(found, Candidate{Path: path, Source: p.source})
	}
	return found, searched, nil
}

// resolve returns the executable file a place names, if there is one.
func (e Env) resolve(p place) (string, bool) {
	path := p.path
	if p.lookup {
		var err error
		if path, err = e.LookPath(path); err != nil {
			return "", false
		}
	}
	info, err := e.Stat(path)
	if err != nil || !e.runnable(info) {
		return "", false
	}
	return path, true
}

// runnable reports whether info describes a file that can be executed on e.GOOS.
func (e Env) runnable(info fs.FileInfo) bool {
	return !info.IsDir() && (e.GOOS == "windows" || info.Mode().Perm()&0o111 != 0)
}

// ChosenError says the llama-server chosen in the configuration or through $LLAMA_SERVER cannot
// be used. It names the path; Err is the cause (fs.ErrNotExist when it does not exist).
type ChosenError struct {
	Source string // SourceConfig or SourceEnv
	Path   string
	Reason string
	Err    error
}

func (e *ChosenError) Error() string {
	who := "configured llama-server"
	if e.Source == SourceEnv {
		who = "llama-server from $LLAMA_SERVER"
	}
	msg := fmt.Sprintf("%s %q %s", who, e.Path, e.Reason)
	if e.Err != nil && e.Reason == "did not run" {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *ChosenError) Unwrap() error { return e.Err }

// explicit resolves a path given by the user: a file, a folder holding llama-server, or a bare
// command name searched in PATH. A leading ~ is the home folder.
func explicit(e Env, given, source string) (Candidate, error) {
	fail := func(path, reason string, err error) (Candidate, error) {
		return Candidate{Path: path, Source: source}, &ChosenError{Source: source, Path: path, Reason: reason, Err: err}
	}
	path := e.expandHome(given)
	if e.isBareName(path) {
		found, err := e.LookPath(path)
		if err != nil {
			return fail(path, "is not in PATH", err)
		}
		path = found
	}
	info, err := e.Stat(path)
	if err != nil && e.GOOS == "windows" {
		if i, err2 := e.Stat(path + ".exe"); err2 == nil {
			path, info, err = path+".exe", i, nil
		}
	}
	if err != nil {
		return fail(path, "does not exist", err)
	}
	if info.IsDir() {
		for _, sub := range [][]string{{e.binaryName()}, {"bin", e.binaryName()}} {
			p := e.join(append([]string{path}, sub...)...)
			if i, err := e.Stat(p); err == nil && e.runnable(i) {
				return Candidate{Path: p, Source: source}, nil
			}
		}
		return fail(path, "is a folder without "+e.binaryName()+" in it", fs.ErrNotExist)
	}
	if !e.runnable(info) {
		return fail(path, "is not executable", fs.ErrPermission)
	}
	return Candidate{Path: path, Source: source}, nil
}
