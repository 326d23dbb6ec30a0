package hub

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestSaveTokenWhereTheHubToolsReadIt(t *testing.T) {
	home := t.TempDir()
	env := map[string]string{"HF_HOME": home}
	getenv := func(k string) string { return env[k] }
	path, err := SaveToken(getenv, "  hf_abc123 \n")
	if err != nil || path != filepath.Join(home, "token") {
		t.Fatalf("SaveToken: %q %v", path, err)
	}
	b, _ := os.ReadFile(path)
	st, _ := os.Stat(path)
	if string(b) != "hf_abc123" || runtime.GOOS != "windows" && st.Mode().Perm() != 0o600 { // Windows has no mode bits
		t.Fatalf("token file %q mode %v", b, st.Mode())
	}
	if got := FromEnv(getenv).Token; got != "hf_abc123" {
		t.Errorf("FromEnv reads %q", got)
	}
	if src := TokenSource(getenv); src != path {
		t.Errorf("TokenSource = %q", src)
	}
	env["HF_TOKEN"] = "hf_env"
	if src := TokenSource(getenv); !strings.Contains(src, "HF_TOKEN") {
		t.Errorf("TokenSource with HF_TOKEN = %q", src)
	}
	delete(env, "HF_TOKEN")
	for _, bad := range []string{"hf abc", "hf\x00abc", strings.Repeat("x", 5000)} {
		if _, err := SaveToken(getenv, bad); err == nil {
			t.Errorf("SaveToken(%q) accepted", bad[:min(len(bad), 10)])
		}
	}
	if _, err := SaveToken(getenv, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) || TokenSource(getenv) != "" {
		t.Errorf("an empty token did not remove the file: %v", err)
	}
}

// A token saved while the manager runs is used by the next pull of a gated repo.
func TestManagerSaveTokenAppliesToNextPull(t *testing.T) {
	f := newFixture(t)
	f.hub.Gate(repoID, "hf_granted")
	env := map[string]string{"HF_HOME": t.TempDir()}
	getenv := func(k string) string { return env[k] }
	m := NewManager(f.c, f.cache, nil, nil)
	ref, _ := ParseRef(repoID + ":Q4_K_M")
	if _, err := m.Start(context.Background(), ref); err == nil {
		t.Fatal("a gated pull without a token started")
	}
	if _, err := m.SaveToken(getenv, "hf_granted"); err != nil {
		t.Fatal(err)
	}
	st, err := m.Start(context.Background(), ref)
	if err != nil {
		t.Fatalf("pull with the saved token: %v", err)
	}
	if end, _ := m.Wait(context.Background(), st.Model); end.State != StateDownloaded {
		t.Fatalf("pull ended %+v", end)
	}
}
