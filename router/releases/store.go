package releases

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"time"

	"github.com/adrg/xdg"
	"github.com/llamatray/llamatray/router/atomicfile"
	"github.com/llamatray/llamatray/router/download"
	"github.com/llamatray/llamatray/router/wire"
)

// Folder layout under Store.Root (<data dir>/llama-server, also the layout an installer may bundle):
//
//	state.json                 {"current": "b7100", "previous": "b7000"}
//	b7100/llamatray-build.json what was installed (Build)
//	b7100/...                  the archive's files as it holds them (llama-b7100/llama-server, libraries beside it)
//
// Builds live apart from the store's own files: a build's folder is named by its llama.cpp tag, and
// only a tag of the form b<number> (b7100; see validTag) names one, in Install, Get and Builds, so a
// release can never name state.json, llamatray-build.json or the files whose names start with ".",
// which are an install in progress (download, staging) and never a build.
const (
	stateFile    = "state.json"
	manifestFile = "llamatray-build.json"
)

// DefaultRoot returns <XDG data home>/llamatray/llama-server (~/.local/share on Linux, ~/Library/
// Application Support on macOS, %LOCALAPPDATA% on Windows). It creates nothing.
func DefaultRoot() (string, error) {
	if xdg.DataHome == "" {
		return "", errors.New("no data folder for this user")
	}
	return filepath.Join(xdg.DataHome, "llamatray", "llama-server"), nil
}

// BundledRoots are the folders where an installer may ship builds in Store's layout, beside the
// executable exe: <dir>/llama-server and, in a macOS app bundle, Contents/Resources/llama-server.
// The builds Llamatray installs itself go to DefaultRoot and win over these, so an update works.
func BundledRoots(exe string) []string {
	dir := filepath.Dir(exe)
	roots := []string{filepath.Join(dir, "llama-server")}
	if filepath.Base(dir) == "MacOS" && filepath.Base(filepath.Dir(dir)) == "Contents" {
		roots = append(roots, filepath.Join(filepath.Dir(dir), "Resources", "llama-server"))
	}
	return roots
}

// BinaryName is llama-server's file name on this system.
func BinaryName() string {
	if runtime.GOOS == "windows" {
		return "llama-server.exe"
	}
	return "llama-server"
}

// Build is one installed build: its manifest plus where it is.
type Build struct {
	Build       string    `json:"build"`            // llama.cpp's tag, also the folder name
	Asset       string    `json:"asset"`            // the archive installed
	Extras      []string  `json:"extras,omitempty"` // more archives unpacked beside it
	SHA256      string    `json:"sha256"`           // the archive's verified digest
	Backend     string    `json:"backend"`          // "CUDA 12.4", "Vulkan", "CPU", "Metal"
	Asked       string    `json:"asked,omitempty"`  // the backend the user asked for; "" = chosen here
	Reason      string    `json:"reason"`           // why that archive was chosen
	Binary      string    `json:"binary"`           // llama-server's path relative to the build's folder
	Version     string    `json:"version"`          // what `llama-server --version` said
	InstalledAt time.Time `json:"installed_at"`

	Path    string `json:"path"`    // llama-server's absolute path (not stored)
	Current bool   `json:"current"` // the build in use (not stored)
}

// State names the build in use and the one before it.
type State struct {
	Current  string `json:"current"`
	Previous string `json:"previous,omitempty"`
}

// Store is a folder of installed builds. It holds no lock: writes go through a temporary file and a
// rename, and the Installer runs one change at a time.
type Store struct {
	Root string
}

// Dir is the folder of build b.
func (s Store) Dir(b string) string { return filepath.Join(s.Root, b) }

// State reads state.json; a missing file is the zero State.
func (s Store) State() (State, error) {
	var st State
	b, err := os.ReadFile(filepath.Join(s.Root, stateFile))
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("llama-server builds: %w", err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("llama-server builds: %s: %w", filepath.Join(s.Root, stateFile), err)
	}
	return st, nil
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.Write(path, append(b, '\n'), 0o644); err != nil {
		return download.DiskFull(err, path)
	}
	return nil
}

// ErrNotInstalled is matched when a build named by the user is not in the store.
var ErrNotInstalled = errors.New("build not installed")

// ErrBadTag is matched when a release's tag is not a llama.cpp build (b7100): only those name a
// build's folder.
var ErrBadTag = errors.New("not a llama.cpp build tag")

// tagPattern is a llama.cpp release tag: "b" and the build number.
var tagPattern = regexp.MustCompile(`^b[0-9]{1,9}$`)

// validTag reports whether tag is a llama.cpp build that may name a folder of the store.
func validTag(tag string) bool { return tagPattern.MatchString(tag) }

// Get reads build b's manifest and checks that its llama-server is there.
func (s Store) Get(b string) (Build, error) {
	if !validTag(b) {
		return Build{}, fmt.Errorf("%w: %q is not a llama.cpp build (b and a number, such as b7100)", ErrNotInstalled, b)
	}
	raw, err := os.ReadFile(filepath.Join(s.Dir(b), manifestFile))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return Build{}, fmt.Errorf("%w: %s (see `llamatray llama-server list`)", ErrNotInstalled, b)
		}
		return Build{}, fmt.Errorf("build %s: %w", b, err)
	}
	var m Build
	if err := json.Unmarshal(raw, &m); err != nil {
		return Build{}, fmt.Errorf("build %s: %s: %w", b, manifestFile, err)
	}
	m.Build = b
	m.Path = filepath.Join(s.Dir(b), filepath.FromSlash(m.Binary))
	if _, err := os.Stat(m.Path); err != nil {
		return Build{}, fmt.Errorf("build %s is damaged (reinstall it): %w", b, err)
	}
	st, _ := s.State()
	m.Current = st.Current == b
	return m, nil
}

// Builds lists the installed builds, newest install first. Damaged folders are left out.
func (s Store) Builds() ([]Build, error) {
	ents, err := os.ReadDir(s.Root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("llama-server builds: %w", err)
	}
	var out []Build
	for _, e := range ents {
		if !e.IsDir() || !validTag(e.Name()) {
			continue
		}
		if b, err := s.Get(e.Name()); err == nil {
			out = append(out, b)
		}
	}
	slices.SortFunc(out, func(a, b Build) int { return b.InstalledAt.Compare(a.InstalledAt) })
	return out, nil
}

// Current returns the build in use, false when none is installed (or it was removed by hand).
func (s Store) Current() (Build, bool) {
	st, err := s.State()
	if err != nil || st.Current == "" {
		return Build{}, false
	}
	b, err := s.Get(st.Current)
	return b, err == nil
}

// use makes build b current, the current one previous.
func (s Store) use(b string) (State, error) {
	st, err := s.State()
	if err != nil {
		return st, err
	}
	if st.Current != b {
		st.Previous, st.Current = st.Current, b
	}
	return st, writeJSON(filepath.Join(s.Root, stateFile), st)
}

// Listing is the GET /api/llama-server document, for the server, its client, and the CLI when no
// instance runs: the builds installed, the llama-server in use, and what installing would pick.
type Listing struct {
	Builds         []Build          `json:"builds"`
	InUse          wire.LlamaServer `json:"in_use"`
	Available      *Available       `json:"available,omitempty"` // when asked for
	AvailableError string           `json:"available_error,omitempty"`
}

// Available is what installing a release would pick here, and the other archives that run here.
type Available struct {
	Build  string  `json:"build"`
	Chosen Offer   `json:"chosen"`
	Others []Offer `json:"others"`
}

// Offer is one archive of a release the user can pick.
type Offer struct {
	Asset   string `json:"asset"`
	Backend string `json:"backend"`
	Size    int64  `json:"size"`
	Reason  string `json:"reason,omitempty"`
}

// AvailableOf describes the choice Plan made in a release.
func AvailableOf(rel Release, c Choice) *Available {
	a := &Available{Build: rel.TagName, Chosen: Offer{Asset: c.Asset.Name, Backend: c.Label(), Size: c.Asset.Size, Reason: c.Reason},
		Others: []Offer{}}
	for _, o := range c.Others {
		a.Others = append(a.Others, Offer{Asset: o.Asset.Name, Backend: o.Label(), Size: o.Asset.Size})
	}
	return a
}
