package cli

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llamatray/llamatray/router/config"
)

// TestPeerAddKeySources: `peer add` takes the peer's key from --api-key, from the standard input's
// first line with "--api-key -", else from $LLAMATRAY_PEER_API_KEY; an empty standard input is a
// usage error.
func TestPeerAddKeySources(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing answers there: the file is changed
	path := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(path, []byte("listen = \""+addr+"\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	add := func(stdin, envKey string, args ...string) (string, int) {
		var out, errb bytes.Buffer
		env := Env{Stdout: &out, Stderr: &errb, Getenv: func(k string) string {
			if k == "LLAMATRAY_PEER_API_KEY" {
				return envKey
			}
			return ""
		}}
		if stdin != "" {
			env.Stdin = strings.NewReader(stdin)
		}
		code := run(append(append([]string{"peer", "add", "http://box.lan:8080"}, args...), "--config", path), Build{}, nil, env)
		return errb.String(), code
	}
	key := func() string {
		t.Helper()
		cfg, err := config.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		return cfg.Peers["box.lan-8080"].APIKey
	}
	for _, c := range []struct {
		name, stdin, env string
		args             []string
		want             string
	}{
		{"flag", "", "from-env", []string{"--api-key", "k-flag"}, "k-flag"},
		{"stdin", " k-stdin \nsecond line\n", "from-env", []string{"--api-key", "-"}, "k-stdin"},
		{"stdin without newline", "k-eof", "", []string{"--api-key", "-"}, "k-eof"},
		{"env", "", " k-env ", nil, "k-env"},
		{"none", "", "", nil, ""},
	} {
		if e, code := add(c.stdin, c.env, c.args...); code != 0 || key() != c.want {
			t.Fatalf("%s: %d %s, key %q", c.name, code, e, key())
		}
	}
	if e, code := add("\n", "", "--api-key", "-"); code != 2 || !strings.Contains(e, "held no key") {
		t.Fatalf("empty stdin: %d %s", code, e)
	}
	if e, code := add("", "", "--api-key", "-"); code != 2 || !strings.Contains(e, "no standard input") {
		t.Fatalf("no stdin: %d %s", code, e)
	}
}
