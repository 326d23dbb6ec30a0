package config

import (
	"os"
	"path/filepath"
)

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
