package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/llamatray/llamatray/router/config"
)

// serveFlags are the flags of `llamatray serve` (and of `llamatray` itself). Each overrides the
// configuration file when given.
type serveFlags struct {
	fs         *flag.FlagSet
	configPath string
	set        map[string]bool
	cfg        config.Config // the flags' values, in the settings they override
	noAutoload bool
}

type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

func newServeFlags(name string, out io.Writer) *serveFlags {
	f := &serveFlags{fs: flag.NewFlagSet(name, flag.ContinueOnError), set: map[string]bool{}}
	fs, c := f.fs, &f.cfg
	fs.SetOutput(out)
	fs.StringVar(&f.configPath, "config", "", "configuration `file` (default: the platform config dir's llamatray/config.toml)")
	fs.StringVar(&c.Listen, "addr", "", "listen `address` (default 127.0.0.1:8080)")
	fs.Var((*stringList)(&c.ModelDirs), "models-dir", "scan this `dir` for GGUF models (repeatable; replaces the config's model_dirs and turns off the default folders: LM Studio's, Ollama's, the Hugging Face cache)")
	fs.StringVar(&c.LlamaServer, "llama-server", "", "`path` of llama-server (default: found on this machine)")
	fs.Var(&c.MemoryLimit, "memory-limit", "memory `size` all loaded models may use together, e.g. 6GiB (default: derived from the machine's available RAM)")
	fs.Var(&c.MemoryReserve, "memory-reserve", "RAM `size` always left free for other programs (default 1GiB)")
	fs.IntVar(&c.MaxLoaded, "max-loaded", 0, "most models running at once, `n`; 0 = no cap")
	fs.Var(&c.IdleSleep, "idle-sleep", "let an idle model sleep (weights freed, process kept) after this `duration` (default 5m; 0 = never)")
	fs.Var(&c.IdleUnload, "idle-unload", "stop an idle model's process after this `duration` (default 30m; 0 = never)")
	fs.Var(&c.QueueTimeout, "queue-timeout", "how long a request may wait for memory or a slot, `duration` (default 2m), then 503")
	fs.IntVar(&c.Defaults.CtxSize, "ctx-size", 0, "default context size `n` for children (default 4096)")
	fs.BoolVar(&f.noAutoload, "no-models-autoload", false, "a request for a model that is not running gets 400 unless it asks ?autoload=true")
	fs.StringVar(&c.LogLevel, "log-level", "", "log `level`: debug, info, warn, error (default info)")
	return f
}

// parse parses args; flag errors come back as usageError (exit code 2).
func (f *serveFlags) parse(args []string) error {
	if err := parseFlags(f.fs, args); err != nil {
		return err
	}
	if f.fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q", f.fs.Arg(0))}
	}
	f.fs.Visit(func(fl *flag.Flag) { f.set[fl.Name] = true })
	return nil
}

// apply overrides cfg with the flags that were given.
func (f *serveFlags) apply(cfg *config.Config) {
	f.fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "addr":
			cfg.Listen = f.cfg.Listen
		case "models-dir":
			cfg.ModelDirs, cfg.ScanDefaultDirs = slices.Clone(f.cfg.ModelDirs), false
		case "llama-server":
			cfg.LlamaServer = f.cfg.LlamaServer
		case "memory-limit":
			cfg.MemoryLimit = f.cfg.MemoryLimit
		case "memory-reserve":
			cfg.MemoryReserve = f.cfg.MemoryReserve
		case "max-loaded":
			cfg.MaxLoaded = f.cfg.MaxLoaded
		case "idle-sleep":
			cfg.IdleSleep = f.cfg.IdleSleep
		case "idle-unload":
			cfg.IdleUnload = f.cfg.IdleUnload
		case "queue-timeout":
			cfg.QueueTimeout = f.cfg.QueueTimeout
		case "ctx-size":
			cfg.Defaults.CtxSize = f.cfg.Defaults.CtxSize
		case "log-level":
			cfg.LogLevel = f.cfg.LogLevel
		case "no-models-autoload":
			cfg.ModelsAutoload = !f.noAutoload
		}
	})
}

type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

var errHelp = errors.New("help requested")

// parseFlags parses args into fs; -h gives errHelp, a flag error a usageError (exit code 2).
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return errHelp
	} else if err != nil {
		return usageError{err}
	}
	return nil
}

// fileConfig is the configuration in the file at path (the default one for ""); a missing or
// broken file gives the defaults.
func fileConfig(path string) config.Config {
	if path == "" {
		path, _ = config.Path()
	}
	if path != "" {
		if b, err := os.ReadFile(path); err == nil {
			if c, err := config.Parse(path, b); err == nil {
				return c
			}
		}
	}
	return config.Default()
}

// configPath is path, or the default configuration file's for "".
func configPath(path string) (string, error) {
	if path != "" {
		return path, nil
	}
	p, err := config.Path()
	if err != nil {
		return "", fmt.Errorf("finding the config dir: %w", err)
	}
	return p, nil
}

// helpFirst prints a command's usage when args name no subcommand or ask for help; done says
// there is nothing left to run, and err is a usage error saying missing when args are empty.
func helpFirst(args []string, usage, missing string, env Env) (done bool, err error) {
	if len(args) > 0 && args[0] != "-h" && args[0] != "--help" && args[0] != "help" {
		return false, nil
	}
	fmt.Fprint(env.Stdout, usage)
	if len(args) == 0 {
		return true, usageError{errors.New(missing)}
	}
	return true, nil
}
