package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llamatray/llamatray/router/envconfig"
)

func TestWorkerUsageErrors(t *testing.T) {
	if code, o := runCLI(t, "worker"); code != 2 || !strings.Contains(o.stderr.String(), "--listen HOST:PORT") {
		t.Fatalf("worker without --listen: %d %q", code, o.stderr.String())
	}
	if code, o := runCLI(t, "worker", "--listen", "nocolon"); code != 2 || !strings.Contains(o.stderr.String(), "nocolon") {
		t.Fatalf("worker --listen nocolon: %d %q", code, o.stderr.String())
	}
	code, o := runCLI(t, "worker", "--listen", "127.0.0.1:0", "--rpc-server", "/nonexistent/ggml-rpc-server")
	if code != 1 || !strings.Contains(o.stderr.String(), "--rpc-server /nonexistent/ggml-rpc-server") {
		t.Fatalf("worker with a missing --rpc-server: %d %q", code, o.stderr.String())
	}
	code, o = runCLI(t, "worker", "--listen", "127.0.0.1:0", "--rpc-server", "/bin/sh", "--token", "short")
	if code != 1 || !strings.Contains(o.stderr.String(), "at least 32 characters") {
		t.Fatalf("worker with a short token: %d %q", code, o.stderr.String())
	}
}

func TestWorkerTokenSources(t *testing.T) {
	dir := t.TempDir()
	good := "abcd-efgh-ijkl-mnop-qrst-uvwx-yz23-4567"
	file := filepath.Join(dir, "token")
	if err := os.WriteFile(file, []byte(good+"\n# a comment line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, []byte("\n"), 0o600)
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == string(envconfig.WorkerToken) {
				return v
			}
			return ""
		}
	}
	rows := []struct {
		name, flag, file, env string
		want, err             string
	}{
		{"none: made", "", "", "", "", ""},
		{"flag", good, "", "", good, ""},
		{"file", "", file, "", good, ""},
		{"environment", "", "", good + "\n", good, ""},
		{"flag over the environment", good, "", "other-token", good, ""},
		{"file over the environment", "", file, "other-token", good, ""},
		{"file and flag", good, file, "", "", "not both"},
		{"missing file", "", filepath.Join(dir, "nope"), "", "", "--token-file"},
		{"empty file", "", empty, "", "", "no token on its first line"},
	}
	for _, r := range rows {
		got, err := workerToken(r.flag, r.file, env(r.env))
		if r.err != "" {
			if err == nil || !strings.Contains(err.Error(), r.err) {
				t.Errorf("%s: error %v, want one saying %q", r.name, err, r.err)
			}
			continue
		}
		if err != nil || got != r.want {
			t.Errorf("%s: %q, %v; want %q", r.name, got, err, r.want)
		}
	}
}

// The worker command reads the token from the environment and from --token-file (a short one is
// refused by the worker with the same message as --token's).
func TestWorkerTokenFromEnvAndFile(t *testing.T) {
	o := &out{}
	env := Env{Stdout: &o.stdout, Stderr: &o.stderr, GOOS: "linux",
		Getenv: func(k string) string { return map[string]string{string(envconfig.WorkerToken): "short-from-env"}[k] }}
	code := run([]string{"worker", "--listen", "127.0.0.1:0", "--rpc-server", "/bin/sh"}, Build{}, nil, env)
	if code != 1 || !strings.Contains(o.stderr.String(), "at least 32 characters (this one 14)") {
		t.Fatalf("worker with %s short: %d %q", string(envconfig.WorkerToken), code, o.stderr.String())
	}
	file := filepath.Join(t.TempDir(), "token")
	os.WriteFile(file, []byte("short-from-file\n"), 0o600)
	code, o = runCLI(t, "worker", "--listen", "127.0.0.1:0", "--rpc-server", "/bin/sh", "--token-file", file)
	if code != 1 || !strings.Contains(o.stderr.String(), "at least 32 characters (this one 15)") {
		t.Fatalf("worker with a short --token-file: %d %q", code, o.stderr.String())
	}
	if code, o := runCLI(t, "worker", "--help"); !strings.Contains(o.stderr.String(), "--token-file") || !strings.Contains(o.stderr.String(), string(envconfig.WorkerToken)) {
		t.Fatalf("worker --help (%d) does not tell of --token-file and %s: %q", code, string(envconfig.WorkerToken), o.stderr.String())
	}
}
