package locate

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// rpcServerNames are llama.cpp's names for its RPC worker: Debian's, then upstream's.
var rpcServerNames = []string{"ggml-rpc-server", "rpc-server"}

// RPCServer finds llama.cpp's RPC server, the program a lent machine runs behind its link: given
// when it is not empty (a path or a name on PATH), else beside the llama-server that Find finds (or
// beside the file its link points to), then in Debian's /usr/libexec/<triplet>/llama/bin, then on
// PATH. The error names every place it looked and how to get it.
func RPCServer(ctx context.Context, given, llamaServer string) (string, error) {
	if given != "" {
		p, err := exec.LookPath(given)
		if err != nil {
			return "", fmt.Errorf("rpc-server %s: %w", given, err)
		}
		return p, nil
	}
	var looked, dirs []string
	exe := ""
	if runtime.GOOS == "windows" {
		exe = ".exe"
	}
	if llamaServer == "" {
		fctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		r, err := Find(fctx, "")
		cancel()
		if err != nil {
			looked = append(looked, "beside llama-server (none found: "+err.Error()+")")
		}
		llamaServer = r.Path
	}
	if llamaServer != "" {
		dirs = append(dirs, filepath.Dir(llamaServer))
		if real, err := filepath.EvalSymlinks(llamaServer); err == nil && filepath.Dir(real) != filepath.Dir(llamaServer) {
			dirs = append(dirs, filepath.Dir(real))
		}
	}
	if runtime.GOOS == "linux" {
		debian, _ := filepath.Glob("/usr/libexec/*/llama/bin")
		dirs = append(dirs, debian...)
	}
	for _, d := range dirs {
		for _, n := range rpcServerNames {
			p := filepath.Join(d, n+exe)
			if st, err := os.Stat(p); err == nil && !st.IsDir() {
				return p, nil
			}
			looked = append(looked, p)
		}
	}
	for _, n := range rpcServerNames {
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
		looked = append(looked, n+" on PATH")
	}
	return "", fmt.Errorf("llama.cpp's RPC server not found; looked at: %s. Give it with --rpc-server PATH "+
		"(Debian: apt install llama.cpp-tools-extra libggml0-backend-rpc)", strings.Join(looked, ", "))
}
