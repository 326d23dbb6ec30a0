package cli

import (
	"strings"
	"testing"
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
