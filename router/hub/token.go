package hub

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/llamatray/llamatray/router/atomicfile"
	"github.com/llamatray/llamatray/router/config"
)

// TokenPath is where the Hub's own tools keep the token: $HF_TOKEN_PATH, else $HF_HOME/token
// (~/.cache/huggingface/token). "" when no home is known.
func TokenPath(getenv func(string) string) string {
	if getenv == nil {
		getenv = os.Getenv
	}
	if p := getenv("HF_TOKEN_PATH"); p != "" {
		return config.ExpandHome(p)
	}
	home := config.HubHome(getenv)
	if home == "" {
		return ""
	}
	return filepath.Join(home, "token")
}

// maxToken bounds a token read or written (the Hub's are under 100 characters).
const maxToken = 4096

// CheckToken refuses what cannot be a Hub token: spaces, control characters, or too long.
func CheckToken(token string) error {
	switch {
	case len(token) > maxToken:
		return fmt.Errorf("a Hugging Face token is not %d characters long", len(token))
	case strings.ContainsFunc(token, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		return fmt.Errorf("a Hugging Face token has no spaces or control characters; paste only the token (hf_…)")
	}
	return nil
}

// SaveToken writes token where the Hub's tools read it (TokenPath), readable by this user only,
// replacing what was there; "" removes the file. It returns the path.
func SaveToken(getenv func(string) string, token string) (string, error) {
	token = strings.TrimSpace(token)
	if err := CheckToken(token); err != nil {
		return "", err
	}
	path := TokenPath(getenv)
	if path == "" {
		return "", fmt.Errorf("no home folder to keep the Hugging Face token in: set HF_HOME")
	}
	if token == "" {
		if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
			return "", fmt.Errorf("removing the Hugging Face token: %w", err)
		}
		return path, nil
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("saving the Hugging Face token: %w", err)
	}
	if err := atomicfile.Write(path, []byte(token), 0o600); err != nil {
		return "", fmt.Errorf("saving the Hugging Face token: %w", err)
	}
	return path, nil
}

// TokenSource says where the token in use comes from: "the HF_TOKEN environment variable", the
// token file's path, or "" when there is none.
func TokenSource(getenv func(string) string) string {
	if getenv == nil {
		getenv = os.Getenv
	}
	if strings.TrimSpace(getenv("HF_TOKEN")) != "" {
		return "the HF_TOKEN environment variable"
	}
	if tokenFromEnv(getenv) != "" {
		return TokenPath(getenv)
	}
	return ""
}

// SaveToken saves token where the Hub's tools keep it (see SaveToken) and makes the token now in
// force — HF_TOKEN when set, which wins, else the saved one — the manager's for the pulls and
// requests that start from now on. It returns the file's path.
func (m *Manager) SaveToken(getenv func(string) string, token string) (string, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	path, err := SaveToken(getenv, token)
	if err != nil {
		return "", err
	}
	m.SetToken(tokenFromEnv(getenv))
	return path, nil
}
