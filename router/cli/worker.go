package cli

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/llamatray/llamatray/router/envconfig"
	"github.com/llamatray/llamatray/router/locate"
	"github.com/llamatray/llamatray/router/worker"
)

const workerUsage = `Usage: llamatray worker --listen HOST:PORT [--token-file PATH | --token T] [--rpc-server PATH] [--threads N]

Lends this machine to a Llamatray elsewhere (one model over several machines): runs llama.cpp's RPC
server bound to 127.0.0.1 only and exposes it only through Llamatray's link (TLS, authenticated by a
pairing token) on --listen. The token is read from --token-file (its first line), else --token, else
the environment variable ` + string(envconfig.WorkerToken) + `; --token is visible to every local user (the
process's command line), the other two are not. Without any it makes one and prints it once, with
the lines to paste into the head's config. --rpc-server defaults to ggml-rpc-server (or rpc-server)
beside the llama-server Llamatray finds, then on PATH.

`

func runWorker(args []string, b Build, env Env) error {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	fs.Usage = func() {
		fmt.Fprint(env.Stderr, workerUsage)
		fs.PrintDefaults()
	}
	listen := fs.String("listen", "", "the link's address, `HOST:PORT` (heads connect to it)")
	token := fs.String("token", "", "pairing token heads must give (default: --token-file, $"+string(envconfig.WorkerToken)+", else make one and print it)")
	tokenFile := fs.String("token-file", "", "a `file` whose first line is the pairing token")
	rpcPath := fs.String("rpc-server", "", "llama.cpp's RPC server `binary` (default: beside llama-server, then PATH)")
	threads := fs.Int("threads", 0, "threads of the RPC server's CPU device (0: its default)")
	name := fs.String("name", "", "this worker's name in the head's config (default: the host name)")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("worker takes no arguments (got %q)", fs.Args())}
	}
	if *listen == "" {
		return usageError{errors.New("worker needs --listen HOST:PORT")}
	}
	if _, _, err := net.SplitHostPort(*listen); err != nil {
		return usageError{fmt.Errorf("--listen %q: %w", *listen, err)}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	path, err := locate.RPCServer(ctx, *rpcPath, "") // --rpc-server, else where locate looks
	if err != nil && *rpcPath != "" {
		return fmt.Errorf("--%w", err)
	} else if err != nil {
		return err
	}
	if *name == "" {
		*name, _ = os.Hostname()
	}
	if *token, err = workerToken(*token, *tokenFile, env.Getenv); err != nil {
		return err
	}
	made := *token == ""
	if made {
		if *token, err = worker.NewToken(); err != nil {
			return err
		}
	}
	log, closeLog := newLogger(*logLevel, env.Stderr)
	defer closeLog()
	return worker.Serve(ctx, worker.Options{
		Listen: *listen, Token: *token, RPCServer: path, Threads: *threads, Logger: log,
		Name: *name, Version: cmp.Or(b.Version, "dev"), Ready: workerReady(env, *name, path, *token, made),
	})
}

// workerReady says where the worker listens once it does, and with made (the token made now) the
// lines to paste into the head's config.
func workerReady(env Env, name, path, token string, made bool) func(addr string) {
	return func(addr string) {
		where := "bound to 127.0.0.1, its one connection held by the worker"
		if mode, _ := worker.Isolation(); mode == worker.IsolationNetns {
			where = "in its own network namespace"
		}
		fmt.Fprintf(env.Stdout, "Worker %s listening on %s (rpc-server %s, %s).\n", name, addr, path, where)
		if made {
			fmt.Fprintf(env.Stdout, "Its pairing token is printed only now. On the head, add to the config:\n\n%s\n",
				worker.ConfigLines(name, addr, token))
		}
	}
}

// workerToken is the pairing token given by --token-file, --token or envconfig.WorkerToken (in that
// order; "" when none is); giving both flags is an error.
func workerToken(flagToken, file string, getenv func(string) string) (string, error) {
	switch {
	case file != "" && flagToken != "":
		return "", usageError{errors.New("give the token with --token-file or --token, not both")}
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("--token-file: %w", err)
		}
		line, _, _ := strings.Cut(string(b), "\n")
		if t := strings.TrimSpace(line); t != "" {
			return t, nil
		}
		return "", fmt.Errorf("--token-file %s: no token on its first line", file)
	case flagToken != "":
		return flagToken, nil
	}
	return envconfig.WorkerToken.From(getenv), nil
}
