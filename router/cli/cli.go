// Package cli is Llamatray's command line: `serve`, `models`, `ps`, `load`, `unload`, `version`, and
// the desktop app when no command is given.
package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/envconfig"
	"github.com/llamatray/llamatray/router/service"
)

// Build describes the binary.
type Build struct {
	Version string
	Commit  string
}

// Desktop runs the tray app; main passes app.Run so this package never imports Fyne.
type Desktop func(ctx context.Context, cfg config.Config, configPath string, logger *slog.Logger) error

// Env is the process environment, injectable for tests.
type Env struct {
	Stdout, Stderr io.Writer
	Stdin          io.Reader // nil: none (a secret read from it is then refused)
	Getenv         func(string) string
	GOOS           string
}

// Main runs the command line and returns the exit code: 0 ok, 1 failure, 2 usage.
func Main(args []string, b Build, desktop Desktop) int {
	if consoleCommand(args) {
		attachConsole() // Windows: print to the console the command was typed in
	}
	setProcs(os.Getenv)
	return run(args, b, desktop, Env{Stdout: os.Stdout, Stderr: os.Stderr, Stdin: os.Stdin, Getenv: os.Getenv, GOOS: runtime.GOOS})
}

const usage = `Llamatray serves the GGUF models on this computer through one HTTP endpoint,
starting llama.cpp's llama-server for each model on demand.

Usage:
  llamatray [flags]             start the tray app (same flags as serve)
  llamatray serve [flags]       run the router headless (servers, CI, scripts)
  llamatray models [--json]     list the models found, with memory estimates (and state when an instance runs)
  llamatray ps [--json]         models of the running instance: state, active requests, memory, why one waits
  llamatray load ID             load a model in the running instance
  llamatray unload ID [--force] unload a model (drains in-flight requests unless --force)
  llamatray pin ID              keep a model loaded: never evicted (saved in the config, as the tray's pin)
  llamatray unpin ID            let a pinned model be evicted again
  llamatray search TEXT         find GGUF models on the Hugging Face Hub (ORG/REPO: its quants)
  llamatray pull ORG/REPO[:QUANT]  download a model from the Hub (verified; Ctrl-C: with the app running the
                                   download goes on there, without it it pauses and pull again resumes)
  llamatray rm ID               delete a model pulled from the Hub
  llamatray worker --listen HOST:PORT [--token-file PATH | --token T] [--rpc-server PATH]
                                lend this machine to a Llamatray elsewhere (llama.cpp's RPC server over
                                an authenticated, encrypted link; one model over several machines)
  llamatray peer add URL [--name NAME] [--api-key KEY] | list | rm NAME
                                other machines' servers whose models are served here too
  llamatray import llama-swap FILE  take llama-swap's config.yaml into the configuration
  llamatray version             print version, commit and Go version
  llamatray update --check      say whether a newer Llamatray is released (installs nothing)
  llamatray llama-server install|list|use|update
                                get and switch llama.cpp's own builds of llama-server

Run 'llamatray serve -h' for the flags.
`

func run(args []string, b Build, desktop Desktop, env Env) int {
	cmd := ""
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	var err error
	switch cmd {
	case "":
		err = runDesktop(args, b, desktop, env)
	case "serve":
		err = runServe(args, b, env)
	case "models":
		err = runModels(args, env)
	case "ps":
		err = runPS(args, env)
	case "load":
		err = runLoad(args, env)
	case "unload":
		err = runUnload(args, env)
	case "pin", "unpin":
		err = runPin(args, env, cmd == "pin")
	case "llama-server":
		err = runLlamaServer(args, env)
	case "peer":
		err = runPeer(args, env)
	case "import":
		err = runImport(args, env)
	case "search":
		err = runSearch(args, env)
	case "pull":
		err = runPull(args, env)
	case "rm":
		err = runRm(args, env)
	case "update":
		err = runUpdate(args, b, env)
	case "worker":
		err = runWorker(args, b, env)
	case "version":
		fmt.Fprintln(env.Stdout, versionString(b))
		return 0
	case "help":
		fmt.Fprint(env.Stdout, usage)
		return 0
	default:
		fmt.Fprintf(env.Stderr, "llamatray: unknown command %q\n\n%s", cmd, usage)
		return 2
	}
	return exitCode(err, env)
}

// exitCode is a command's exit status (2: its usage was wrong), err said on the standard error.
func exitCode(err error, env Env) int {
	if err == nil || errors.Is(err, errHelp) {
		return 0
	}
	fmt.Fprintf(env.Stderr, "llamatray: %v\n", err)
	if errors.As(err, new(usageError)) {
		return 2
	}
	return 1
}

func versionString(b Build) string {
	c := b.Commit
	if c == "" {
		if info, ok := debug.ReadBuildInfo(); ok {
			for _, s := range info.Settings {
				if s.Key == "vcs.revision" {
					c = s.Value
				}
			}
		}
	}
	return fmt.Sprintf("llamatray %s (commit %s, %s, %s/%s)", cmp.Or(b.Version, "dev"), cmp.Or(c, "unknown"), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// loadConfig reads the configuration file (writing the commented default on first run) and applies
// the flags.
func loadConfig(f *serveFlags) (config.Config, string, error) {
	path, err := configPath(f.configPath)
	if err != nil {
		return config.Config{}, "", err
	}
	cfg, err := config.Load(path)
	var dfe *config.DefaultFileError
	if errors.As(err, &dfe) {
		// The default file could not be written (read-only home, say): run on the defaults.
		fmt.Fprintf(os.Stderr, "llamatray: warning: %v\n", err)
		err = nil
	}
	if err != nil {
		return cfg, path, err
	}
	f.apply(&cfg)
	if err := cfg.Validate(); err != nil {
		return cfg, path, fmt.Errorf("invalid settings (config %s and flags): %w", path, err)
	}
	return cfg, path, nil
}

// newLogger logs to stderr and, when possible, to llamatray.log in the log dir.
func newLogger(level string, stderr io.Writer) (*slog.Logger, func()) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		lv = slog.LevelInfo
	}
	w := stderr
	closeFn := func() {}
	if dir, err := config.LogDir(); err == nil {
		if f, err := os.OpenFile(filepath.Join(dir, "llamatray.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644); err == nil {
			w = io.MultiWriter(stderr, f)
			closeFn = func() { f.Close() }
		}
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: lv})), closeFn
}

func runServe(args []string, b Build, env Env) error {
	f := newServeFlags("serve", env.Stderr)
	f.fs.Usage = func() {
		fmt.Fprintf(env.Stderr, "Usage: llamatray serve [flags]\n\nRuns the router and engine without a window. Flags override the config file.\n\n")
		f.fs.PrintDefaults()
	}
	if err := f.parse(args); err != nil {
		return err
	}
	cfg, path, err := loadConfig(f)
	if err != nil {
		return err
	}
	log, closeLog := newLogger(cfg.LogLevel, env.Stderr)
	defer closeLog()
	if prof := envconfig.CPUProfile.From(env.Getenv); prof != "" {
		stopProf, err := startCPUProfile(prof)
		if err != nil {
			return err
		}
		defer stopProf()
	}
	svc, err := service.New(cfg, service.Options{ConfigPath: path, Version: b.Version, Logger: log})
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if ls := svc.LlamaServer(); ls.Path == "" {
		log.Warn("llama-server not found; requests will get 503 until one is installed", "why", ls.Err, "hint", ls.Hint)
	} else {
		log.Info("using llama-server", "path", ls.Path, "version", ls.Version, "found_in", ls.Source)
	}
	if err := svc.Start(ctx); err != nil {
		sctx, c := context.WithTimeout(context.Background(), 10*time.Second)
		svc.Stop(sctx)
		c()
		return err
	}
	log.Info("llamatray ready", "addr", svc.ListenAddr(), "models", len(svc.Catalog().Models()), "config", path)
	<-ctx.Done()
	log.Info("shutting down")
	sctx, c := context.WithTimeout(context.Background(), 30*time.Second)
	defer c()
	return svc.Stop(sctx)
}

func runDesktop(args []string, b Build, desktop Desktop, env Env) error {
	f := newServeFlags("llamatray", env.Stderr)
	f.fs.Usage = func() {
		fmt.Fprint(env.Stderr, usage+"\nFlags (for the tray app and serve):\n")
		f.fs.PrintDefaults()
	}
	if err := f.parse(args); err != nil {
		return err
	}
	if env.GOOS == "linux" || env.GOOS == "freebsd" {
		if env.Getenv("DISPLAY") == "" && env.Getenv("WAYLAND_DISPLAY") == "" {
			return errors.New("no display found (DISPLAY and WAYLAND_DISPLAY are unset): run `llamatray serve` for the headless router")
		}
	}
	cfg, path, err := loadConfig(f)
	if err != nil {
		return err
	}
	log, closeLog := newLogger(cfg.LogLevel, env.Stderr)
	defer closeLog()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if desktop == nil {
		return errors.New("this build has no desktop app: run `llamatray serve`")
	}
	return desktop(ctx, cfg, path, log)
}
