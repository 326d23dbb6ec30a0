package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/adrg/xdg"
)

// appName is the folder name used under every platform directory.
const appName = "llamatray"

// Path returns the platform config file path: $XDG_CONFIG_HOME/llamatray/config.toml on Linux,
// ~/Library/Application Support/llamatray/config.toml on macOS and
// %LOCALAPPDATA%\llamatray\config.toml on Windows. It does not create anything.
func Path() (string, error) {
	if xdg.ConfigHome == "" {
		return "", errors.New("config: no config directory for this user")
	}
	return filepath.Join(xdg.ConfigHome, appName, "config.toml"), nil
}

// StateDir returns (and creates) the directory for persistent state such as learned model
// footprints: $XDG_STATE_HOME/llamatray on Linux.
func StateDir() (string, error) {
	if xdg.StateHome == "" {
		return "", errors.New("config: no state directory for this user")
	}
	return mkdir(filepath.Join(xdg.StateHome, appName))
}

// LogDir returns (and creates) the directory for log files: ~/Library/Logs/llamatray on macOS,
// <StateDir>/logs elsewhere.
func LogDir() (string, error) {
	if runtime.GOOS == "darwin" && xdg.Home != "" {
		return mkdir(filepath.Join(xdg.Home, "Library", "Logs", appName))
	}
	if xdg.StateHome == "" {
		return "", errors.New("config: no state directory for this user")
	}
	return mkdir(filepath.Join(xdg.StateHome, appName, "logs"))
}

// DataModelsDir returns (and creates) Llamatray's own model folder, <XDG data>/llamatray/models.
func DataModelsDir() (string, error) {
	p := dataModelsPath()
	if p == "" {
		return "", errors.New("config: no data directory for this user")
	}
	return mkdir(p)
}

func dataModelsPath() string {
	if xdg.DataHome == "" {
		return ""
	}
	return filepath.Join(xdg.DataHome, appName, "models")
}

func mkdir(p string) (string, error) {
	if err := os.MkdirAll(p, 0o700); err != nil {
		return "", fmt.Errorf("config: create %s: %w", p, err)
	}
	return p, nil
}

// ExpandHome replaces a leading "~" or "~/" (also "~\" on Windows) with the user's home folder.
// Other paths are returned unchanged.
func ExpandHome(p string) string {
	if p != "~" && !strings.HasPrefix(p, "~/") && !(runtime.GOOS == "windows" && strings.HasPrefix(p, `~\`)) {
		return p
	}
	home := homeDir()
	if home == "" {
		return p
	}
	return filepath.Join(home, p[1:])
}

func homeDir() string {
	if h, err := os.UserHomeDir(); err == nil && h != "" {
		return h
	}
	return xdg.Home
}

// DefaultModelDirs lists the usual model folders in the order they are scanned, whether or not
// they exist: Llamatray's own folder, LM Studio's, llama.cpp's download cache ($LLAMA_CACHE), the
// Hugging Face hub cache (HubCacheDir) and Ollama's model stores (OllamaDirs), which the catalog
// reads in place.
func DefaultModelDirs() []string {
	home := homeDir()
	var dirs []string
	add := func(p string) {
		if p != "" {
			dirs = append(dirs, filepath.Clean(p))
		}
	}
	add(dataModelsPath())
	if home != "" {
		add(filepath.Join(home, ".lmstudio", "models"))
		add(filepath.Join(home, ".cache", "lm-studio", "models"))
	}
	add(llamaCacheDir(home))
	add(HubCacheDir(nil))
	for _, d := range OllamaDirs(nil) {
		add(d)
	}
	return dirs
}

// ollamaServiceDir is where the Linux service set up by Ollama's installer keeps its models:
// the home folder of its "ollama" user. A variable so that tests can move it.
var ollamaServiceDir = "/usr/share/ollama/.ollama/models"

// OllamaDirs lists Ollama's model stores, whether or not they exist: $OLLAMA_MODELS when set
// (as Ollama reads it: spaces and quotes around it dropped), else ~/.ollama/models (the same
// folder on macOS and, as %USERPROFILE%\.ollama\models, on Windows), and on Linux also the
// service's /usr/share/ollama/.ollama/models. getenv nil means os.Getenv.
func OllamaDirs(getenv func(string) string) []string {
	if getenv == nil {
		getenv = os.Getenv
	}
	var dirs []string
	if d := strings.Trim(strings.TrimSpace(getenv("OLLAMA_MODELS")), "\"'"); d != "" {
		dirs = append(dirs, filepath.Clean(ExpandHome(d)))
	} else if home := homeDir(); home != "" {
		dirs = append(dirs, filepath.Join(home, ".ollama", "models"))
	}
	if runtime.GOOS == "linux" && ollamaServiceDir != "" && !slices.Contains(dirs, filepath.Clean(ollamaServiceDir)) {
		dirs = append(dirs, filepath.Clean(ollamaServiceDir))
	}
	return dirs
}

// llamaCacheDir mirrors llama.cpp's fs_get_cache_directory.
func llamaCacheDir(home string) string {
	if v := os.Getenv("LLAMA_CACHE"); v != "" {
		return ExpandHome(v)
	}
	switch runtime.GOOS {
	case "windows":
		if v := os.Getenv("LOCALAPPDATA"); v != "" {
			return filepath.Join(v, "llama.cpp")
		}
	case "darwin":
		if home != "" {
			return filepath.Join(home, "Library", "Caches", "llama.cpp")
		}
	default:
		if v := os.Getenv("XDG_CACHE_HOME"); v != "" {
			return filepath.Join(v, "llama.cpp")
		}
		if home != "" {
			return filepath.Join(home, ".cache", "llama.cpp")
		}
	}
	return ""
}

// ModelDirsResolved returns the folders to scan: ModelDirs with "~" expanded, then, when
// ScanDefaultDirs is set, every DefaultModelDirs entry that exists. Duplicates are dropped.
func (c Config) ModelDirsResolved() []string {
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		if p == "" {
			return
		}
		p = filepath.Clean(p)
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, d := range c.ModelDirs {
		add(ExpandHome(strings.TrimSpace(d)))
	}
	if c.presets != nil { // the files of preset sections with `model`
		for _, f := range c.presets.Files {
			add(f)
		}
	}
	if c.ScanDefaultDirs {
		for _, d := range DefaultModelDirs() {
			if st, err := os.Stat(d); err == nil && st.IsDir() {
				add(d)
			}
		}
	}
	return out
}

// HubHome is the Hugging Face Hub clients' home folder: $HF_HOME, else
// $XDG_CACHE_HOME/huggingface, else ~/.cache/huggingface (huggingface_hub's constants). getenv
// nil means os.Getenv; "" when no home folder is known.
func HubHome(getenv func(string) string) string {
	if getenv == nil {
		getenv = os.Getenv
	}
	if d := getenv("HF_HOME"); d != "" {
		return filepath.Clean(ExpandHome(d))
	}
	if d := getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(ExpandHome(d), "huggingface")
	}
	if home := homeDir(); home != "" {
		return filepath.Join(home, ".cache", "huggingface")
	}
	return ""
}

// HubCacheDir is the Hugging Face Hub cache, shared by the Hub's clients and llama.cpp:
// $HF_HUB_CACHE, else HubHome()/hub.
func HubCacheDir(getenv func(string) string) string {
	if getenv == nil {
		getenv = os.Getenv
	}
	if d := getenv("HF_HUB_CACHE"); d != "" {
		return filepath.Clean(ExpandHome(d))
	}
	if h := HubHome(getenv); h != "" {
		return filepath.Join(h, "hub")
	}
	return ""
}
