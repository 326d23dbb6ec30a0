package app

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/llamatray/llamatray/router/config"
)

// settingsValues are the settings window's fields, as the user typed them.
type settingsValues struct {
	ModelDirs       []string
	ScanDefaultDirs bool
	Port            string
	MemoryLimit     string // "" = automatic
	MemoryReserve   string
	MaxLoaded       string // "0" = no cap
	IdleSleep       string
	IdleUnload      string
	QueueTimeout    string
	LlamaServer     string // "" = find it
	Presets         string // llama.cpp's router preset INI; "" = none
	CtxSize         string
	GPULayers       string // "" = llama-server's default, "all" or "-1" = every layer
	Autostart       bool
	OllamaPort      bool // also answer on Ollama's port
}

// The keys of the settings fields, as TOML key paths; config.FieldError keys map onto them.
const (
	keyModelDirs     = "model_dirs"
	keyListen        = "listen"
	keyMemoryLimit   = "memory_limit"
	keyMemoryReserve = "memory_reserve"
	keyMaxLoaded     = "max_loaded"
	keyIdleSleep     = "idle_sleep"
	keyIdleUnload    = "idle_unload"
	keyQueueTimeout  = "queue_timeout"
	keyLlamaServer   = "llama_server"
	keyPresets       = "presets"
	keyCtxSize       = "defaults.ctx_size"
	keyGPULayers     = "defaults.gpu_layers"
)

// valuesFrom fills the fields from a configuration.
func valuesFrom(c config.Config, autostart bool) settingsValues {
	v := settingsValues{
		ModelDirs:       append([]string(nil), c.ModelDirs...),
		ScanDefaultDirs: c.ScanDefaultDirs,
		Port:            c.Listen,
		MemoryReserve:   c.MemoryReserve.String(),
		MaxLoaded:       strconv.Itoa(c.MaxLoaded),
		IdleSleep:       c.IdleSleep.String(),
		IdleUnload:      c.IdleUnload.String(),
		QueueTimeout:    c.QueueTimeout.String(),
		LlamaServer:     c.LlamaServer,
		Presets:         c.Presets,
		CtxSize:         strconv.Itoa(c.Defaults.CtxSize),
		Autostart:       autostart,
		OllamaPort:      c.OllamaPort,
	}
	if _, port, err := net.SplitHostPort(c.Listen); err == nil {
		v.Port = port
	}
	if c.MemoryLimit > 0 {
		v.MemoryLimit = c.MemoryLimit.String()
	}
	if g := c.Defaults.GPULayers; g != nil {
		v.GPULayers = strconv.Itoa(*g)
		if *g < 0 {
			v.GPULayers = "all"
		}
	}
	return v
}

// fieldTexts are the text fields' values by settings key.
func (v settingsValues) fieldTexts() map[string]string {
	return map[string]string{
		keyListen: v.Port, keyMemoryLimit: v.MemoryLimit, keyMemoryReserve: v.MemoryReserve,
		keyMaxLoaded: v.MaxLoaded, keyIdleSleep: v.IdleSleep, keyIdleUnload: v.IdleUnload,
		keyQueueTimeout: v.QueueTimeout, keyLlamaServer: v.LlamaServer, keyPresets: v.Presets, keyCtxSize: v.CtxSize,
		keyGPULayers: v.GPULayers,
	}
}

// apply writes the fields over base. Fields that do not parse are reported by key, and base's value
// is kept for them; every other setting of base (models, API keys, ...) is left as it was.
func (v settingsValues) apply(base config.Config) (config.Config, map[string]error) {
	c := base
	c.Models = base.Models // shared map; the window never edits it
	errs := map[string]error{}
	bad := func(key string, err error) { errs[key] = err }

	c.ModelDirs = nil
	for _, d := range v.ModelDirs {
		if d = strings.TrimSpace(d); d != "" {
			c.ModelDirs = append(c.ModelDirs, d)
		}
	}
	c.ScanDefaultDirs = v.ScanDefaultDirs
	c.OllamaPort = v.OllamaPort

	host := "127.0.0.1"
	if h, _, err := net.SplitHostPort(base.Listen); err == nil {
		host = h
	}
	if port, err := strconv.Atoi(strings.TrimSpace(v.Port)); err != nil || port < 1 || port > 65535 {
		bad(keyListen, fmt.Errorf("%q is not a port number (1–65535)", v.Port))
	} else {
		c.Listen = net.JoinHostPort(host, strconv.Itoa(port))
	}

	v.applyLimits(&c, bad)
	c.LlamaServer = strings.TrimSpace(v.LlamaServer)
	c.Presets = strings.TrimSpace(v.Presets)
	v.applyDefaults(&c, bad)
	if len(errs) == 0 {
		errs = nil
	}
	return c, errs
}

// applyLimits writes the memory limit and reserve, the cap on loaded models and the timers over c;
// bad is told the fields that do not parse.
func (v settingsValues) applyLimits(c *config.Config, bad func(key string, err error)) {
	switch s := strings.TrimSpace(v.MemoryLimit); strings.ToLower(s) {
	case "", "0", "auto", "automatic":
		c.MemoryLimit = 0
	default:
		if n, err := config.ParseSize(s); err != nil {
			bad(keyMemoryLimit, err)
		} else {
			c.MemoryLimit = n
		}
	}
	if n, err := config.ParseSize(v.MemoryReserve); err != nil {
		bad(keyMemoryReserve, err)
	} else {
		c.MemoryReserve = n
	}
	if n, err := strconv.Atoi(strings.TrimSpace(v.MaxLoaded)); err != nil || n < 0 {
		bad(keyMaxLoaded, fmt.Errorf("%q is not a whole number (0 = no limit)", v.MaxLoaded))
	} else {
		c.MaxLoaded = n
	}
	for _, d := range []struct {
		key  string
		text string
		dst  *config.Duration
	}{
		{keyIdleSleep, v.IdleSleep, &c.IdleSleep},
		{keyIdleUnload, v.IdleUnload, &c.IdleUnload},
		{keyQueueTimeout, v.QueueTimeout, &c.QueueTimeout},
	} {
		if n, err := config.ParseDuration(d.text); err != nil {
			bad(d.key, err)
		} else {
			*d.dst = n
		}
	}
}

// applyDefaults writes the models' default context size and GPU layers over c; bad is told the
// fields that do not parse.
func (v settingsValues) applyDefaults(c *config.Config, bad func(key string, err error)) {
	if n, err := strconv.Atoi(strings.TrimSpace(v.CtxSize)); err != nil || n < 0 {
		bad(keyCtxSize, fmt.Errorf("%q is not a context size (a whole number of tokens; 0 = the model's own)", v.CtxSize))
	} else {
		c.Defaults.CtxSize = n
	}
	switch s := strings.ToLower(strings.TrimSpace(v.GPULayers)); s {
	case "":
		c.Defaults.GPULayers = nil
	case "all", "-1":
		all := -1
		c.Defaults.GPULayers = &all
	default:
		if n, err := strconv.Atoi(s); err != nil || n < 0 {
			bad(keyGPULayers, fmt.Errorf("%q is not a number of layers (empty = llama-server's default, \"all\" = every layer)", v.GPULayers))
		} else {
			c.Defaults.GPULayers = &n
		}
	}
}

// fieldErrors sorts the problems in err (as returned by config.Validate or Save) by settings key;
// problems with keys the window does not show are returned as other.
func fieldErrors(err error, shown map[string]bool) (byKey map[string]error, other []error) {
	byKey = map[string]error{}
	var walk func(error)
	walk = func(e error) {
		if joined, ok := e.(interface{ Unwrap() []error }); ok {
			for _, x := range joined.Unwrap() {
				walk(x)
			}
			return
		}
		var fe *config.FieldError
		switch {
		case e == nil:
		case errors.As(e, &fe) && e == error(fe):
			if key := strings.Join(fe.Key, "."); shown[key] {
				byKey[key] = errors.New(fe.Reason)
			} else {
				other = append(other, fe)
			}
		case errors.As(e, &fe):
			walk(errors.Unwrap(e)) // a wrapper such as "config: not saved: ..." around field errors
		default:
			other = append(other, e)
		}
	}
	walk(err)
	return byKey, other
}

// notAppliedToRunning says which changes from old to v the models running now (running, their IDs)
// do not take until they load again — what their llama-server was started with, and the idle
// timers they were started under — and what to do; "" when none does.
func notAppliedToRunning(old, v settingsValues, running []string) string {
	if len(running) == 0 {
		return ""
	}
	var changed []string
	for _, c := range []struct {
		name     string
		was, now string
	}{
		{"llama-server", old.LlamaServer, v.LlamaServer},
		{"context size", old.CtxSize, v.CtxSize},
		{"GPU layers", old.GPULayers, v.GPULayers},
		{"sleep when idle", old.IdleSleep, v.IdleSleep},
		{"unload when idle", old.IdleUnload, v.IdleUnload},
	} {
		if strings.TrimSpace(c.was) != strings.TrimSpace(c.now) {
			changed = append(changed, c.name)
		}
	}
	if len(changed) == 0 {
		return ""
	}
	verb := "keep"
	if len(running) == 1 {
		verb = "keeps"
	}
	return fmt.Sprintf("Running now, %s %s the old %s until loaded again: Unload and Load to use the new.",
		joinAnd(running), verb, joinAnd(changed))
}

// joinAnd joins words as a sentence does: "a", "a and b", "a, b and c".
func joinAnd(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}
