package locate

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestParseVersion(t *testing.T) {
	cases := []struct {
		name, out string
		want      string
		build     int
		ok        bool
	}{
		{"upstream", "version: 6123 (a1b2c3d)\nbuilt with cc (GCC) 13.2.0 for x86_64-linux-gnu\n", "6123 (a1b2c3d)", 6123, true},
		{"debian", "version: 0.7.0 (build 11669, commit Debian)\nbuilt with GNU 16.2.0 for Linux x86_64\n", "0.7.0 (build 11669, commit Debian)", 11669, true},
		{"backend lines first", "load_backend: loaded RPC backend from /x/libggml-rpc.so\nggml_cuda_init: found 1 CUDA devices:\nversion: 7001 (0badf00)\n", "7001 (0badf00)", 7001, true},
		{"windows line ends", "version: 5555 (cafe123)\r\nbuilt with MSVC 19.40 for x64\r\n", "5555 (cafe123)", 5555, true},
		{"tag style", "version: b4500\n", "b4500", 4500, true},
		{"no build number", "version: unknown (unknown)\n", "unknown (unknown)", 0, true},
		{"empty version", "version:   \n", "", 0, false},
		{"not llama-server", "usage: something else\n", "", 0, false},
		{"nothing", "", "", 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := ParseVersion(tc.out)
			if got != tc.want || ok != tc.ok {
				t.Fatalf("ParseVersion = %q, %v; want %q, %v", got, ok, tc.want, tc.ok)
			}
			if b := buildNumber(got); b != tc.build {
				t.Errorf("buildNumber(%q) = %d, want %d", got, b, tc.build)
			}
		})
	}
}

// writeScript writes an executable shell script standing in for llama-server.
func writeScript(t *testing.T, path, body string) string {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("the stand-in llama-server is a shell script")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// fakeLlamaServer answers --version the way llama-server does: on stderr, two lines.
const fakeLlamaServer = `if [ "$1" = "--version" ]; then
  echo "version: 1234 (abcdef)" >&2
  echo "built with cc (GCC) 12.2.0 for x86_64-linux-gnu" >&2
  exit 0
fi
echo "unexpected arguments: $*" >&2
exit 2
`

func TestVersionRunsTheBinary(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name, body string
		want       string
		wantErr    string
	}{
		{name: "llama-server", body: fakeLlamaServer, want: "1234 (abcdef)"},
		{name: "missing library", body: "echo 'llama-server: error while loading shared libraries: libllama.so: cannot open shared object file' >&2\nexit 127\n",
			wantErr: "libllama.so"},
		{name: "silent", body: "exit 0\n", wantErr: "printed no version line (no output)"},
		{name: "version then failure", body: "echo 'version: 42 (deadbee)' >&2\nexit 1\n", want: "42 (deadbee)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := writeScript(t, filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"), "llama-server"), tc.body)
			got, err := Version(context.Background(), path)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), path) {
					t.Fatalf("error = %v, want one naming %s and containing %q", err, path, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("Version = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestVersionTimeout(t *testing.T) {
	// The shell waits on a sleeping grandchild that keeps the output pipe open.
	path := writeScript(t, filepath.Join(t.TempDir(), "llama-server"), "sleep 60\n")
	_, err := runVersion(context.Background(), path, 200*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "did not answer --version within 200ms") {
		t.Fatalf("error = %v, want a timeout", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %v does not wrap context.DeadlineExceeded", err)
	}
}

func TestVersionCancelled(t *testing.T) {
	path := writeScript(t, filepath.Join(t.TempDir(), "llama-server"), fakeLlamaServer)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Version(ctx, path); !errors.Is(err, context.Canceled) {
		t.Fatalf("error = %v, want context.Canceled", err)
	}
}

func TestVersionOutputIsCapped(t *testing.T) {
	// 200 KiB of noise after the version line: kept output stays bounded, the version is read.
	path := writeScript(t, filepath.Join(t.TempDir(), "llama-server"),
		"echo 'version: 99 (1234567)' >&2\nhead -c 204800 /dev/zero | tr '\\0' x >&2\n")
	got, err := Version(context.Background(), path)
	if err != nil || got != "99 (1234567)" {
		t.Fatalf("Version = %q, %v", got, err)
	}
	var c capped
	c.Write(make([]byte, maxOutput+10))
	if n, _ := c.Write([]byte("more")); n != 4 || len(c.String()) != maxOutput {
		t.Fatalf("capped kept %d bytes, want %d", len(c.String()), maxOutput)
	}
}
