package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/llamatray/llamatray/router/testbed/bench/harness"
)

// The nginx column of the peer run: nginx in front of the direct llama-server, the floor a proxy
// hop costs on this machine. One process (no master, so its CPU is all the proxying), a keep-alive
// pool of HTTP/1.1 connections upstream, nothing buffered, no access log.

// nginxConf is the private configuration: everything under prefix, nothing under /etc read.
const nginxConf = `daemon off;
master_process off;
worker_processes 1;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log warn;
events { worker_connections 1024; }
http {
	access_log off;
	client_body_temp_path %[1]s/body;
	proxy_temp_path %[1]s/proxy;
	fastcgi_temp_path %[1]s/fastcgi;
	uwsgi_temp_path %[1]s/uwsgi;
	scgi_temp_path %[1]s/scgi;
	upstream llama {
		server %[2]s;
		keepalive 32;
	}
	server {
		listen 127.0.0.1:%[3]d;
		location / {
			proxy_pass http://llama;
			proxy_http_version 1.1;
			proxy_set_header Connection "";
			proxy_buffering off;
		}
	}
}
`

// findNginx is -nginx ($NGINX), else the copy scripts/fetch-nginx.sh keeps in the cache, else nginx
// on PATH.
func findNginx(flagValue string) (string, error) {
	if flagValue != "" {
		if _, err := os.Stat(flagValue); err != nil {
			return "", fmt.Errorf("nginx: %w", err)
		}
		return flagValue, nil
	}
	root := os.Getenv("LLAMATRAY_CACHE")
	if root == "" {
		if home, err := os.UserHomeDir(); err == nil {
			root = filepath.Join(home, ".cache", "llamatray-dev")
		}
	}
	if root != "" {
		if p := filepath.Join(root, "nginx", "bin", "nginx"); isExecutable(p) {
			return p, nil
		}
	}
	if p, err := exec.LookPath("nginx"); err == nil {
		return p, nil
	}
	return "", errNoNginx
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

// errNoNginx says where to get nginx.
var errNoNginx = errors.New("no nginx: run `bash scripts/fetch-nginx.sh` (Debian's nginx-light, unpacked into the cache) or pass NGINX=PATH or -nginx PATH")

// startNginx starts nginx in front of the llama-server at directURL (http://HOST:PORT), model
// being the name the direct target's requests give.
func startNginx(ctx context.Context, bin, directURL, model, tmp string) (*peer, error) {
	prefix := filepath.Join(tmp, "nginx")
	if err := os.MkdirAll(prefix, 0o755); err != nil {
		return nil, err
	}
	port, err := harness.FreePort()
	if err != nil {
		return nil, err
	}
	conf := filepath.Join(prefix, "nginx.conf")
	if err := os.WriteFile(conf, fmt.Appendf(nil, nginxConf, prefix, strings.TrimPrefix(directURL, "http://"), port), 0o600); err != nil {
		return nil, err
	}
	argv := []string{bin, "-p", prefix, "-e", filepath.Join(prefix, "error.log"), "-c", conf}
	d, _, err := harness.StartServer(ctx, argv, nil, fmt.Sprintf("http://127.0.0.1:%d", port), filepath.Join(tmp, "nginx.log"))
	if err != nil {
		return nil, fmt.Errorf("nginx: %w", err)
	}
	return &peer{name: "nginx", base: d.URL, model: func(string) string { return model }, cpu: d.CPU, pid: d.PID, stop: d.Stop, front: true,
		note: "`nginx` (" + nginxVersion(ctx, bin) + ", Debian's nginx-light) in front of the direct llama-server: one process (`master_process off`, " +
			"`worker_processes 1`), `upstream { keepalive 32; }`, `proxy_http_version 1.1`, `Connection \"\"`, `proxy_buffering off`, no access log; the load cells only"}, nil
}

// nginxVersion is what `nginx -v` prints ("nginx/1.30.6").
func nginxVersion(ctx context.Context, bin string) string {
	out, err := exec.CommandContext(ctx, bin, "-v").CombinedOutput()
	if err != nil {
		return "version unknown"
	}
	s := strings.TrimSpace(string(out))
	if i := strings.Index(s, "nginx/"); i >= 0 {
		return strings.Fields(s[i:])[0]
	}
	return s
}
