package config

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"slices"
	"strings"
)

// FieldError says one setting has a bad value. Key is the TOML key path, such as
// ["models", "qwen", "ctx_size"].
type FieldError struct {
	Key    []string
	Reason string
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("key %q: %s", strings.Join(e.Key, "."), e.Reason)
}

// reservedArgs are llama-server flags Llamatray sets itself for every child.
var reservedArgs = map[string]string{
	"--host": "listen", "--port": "listen", "-m": "the catalog", "--model": "the catalog",
	"-hf": "the catalog", "--hf-repo": "the catalog", "--models-dir": "the catalog",
	"-c": "ctx_size", "--ctx-size": "ctx_size", "-ngl": "gpu_layers", "--gpu-layers": "gpu_layers",
	"--n-gpu-layers": "gpu_layers", "--sleep-idle-seconds": "idle_sleep", "--api-key": "api_keys",
	"-md": "draft", "--model-draft": "draft", "--spec-draft-model": "draft",
	"-hfd": "draft", "-hfrd": "draft", "--hf-repo-draft": "draft", "--spec-draft-hf": "draft",
	"-ngld": "draft_gpu_layers", "--gpu-layers-draft": "draft_gpu_layers",
	"--n-gpu-layers-draft": "draft_gpu_layers", "--spec-draft-ngl": "draft_gpu_layers",
	"--rpc": "workers", "--spec-draft-n-max": "draft_max", "--draft-max": "draft_max", "--draft-n": "draft_max", "--draft": "draft_max",
}

// Validate checks every value and returns all problems found, joined; each is a *FieldError.
func (c Config) Validate() error {
	var p problems
	c.checkServer(&p)
	c.checkDurations(&p)
	c.checkAccess(&p)
	checkDefaults(c.Defaults, &p)
	c.validateModels(&p)
	c.validatePeers(&p)
	c.validateWorkers(&p)
	c.validateLend(&p)
	return errors.Join(p...)
}

// problems collects what a validation finds, each a *FieldError, in the order found.
type problems []error

// add records that the setting at key has a bad value, and why.
func (p *problems) add(reason string, key ...string) {
	*p = append(*p, &FieldError{Key: key, Reason: reason})
}

// noUnit is the reason for a byte count so small it must have lost its unit.
func noUnit(n Size) string {
	return fmt.Sprintf("%d bytes is too small; did you forget a unit, like \"%dGiB\"?", n, n)
}

// checkServer checks where the server listens, where models are, and the memory it may use.
func (c Config) checkServer(p *problems) {
	if err := checkListen(c.Listen); err != nil {
		p.add(err.Error(), "listen")
	}
	for _, d := range c.ModelDirs {
		if strings.TrimSpace(d) == "" {
			p.add("empty folder name", "model_dirs")
		}
	}
	if c.MemoryLimit < 0 {
		p.add("must not be negative (0 = derived from the machine)", "memory_limit")
	} else if c.MemoryLimit > 0 && c.MemoryLimit < MiB {
		p.add(noUnit(c.MemoryLimit), "memory_limit")
	}
	if c.MemoryReserve < 0 {
		p.add("must not be negative", "memory_reserve")
	} else if c.MemoryLimit > 0 && c.MemoryReserve >= c.MemoryLimit {
		p.add(fmt.Sprintf("%s leaves nothing of memory_limit %s for models; the reserve must be smaller", c.MemoryReserve, c.MemoryLimit), "memory_reserve")
	}
	for dev, n := range c.DeviceMemoryLimit {
		switch {
		case strings.TrimSpace(dev) == "":
			p.add("empty device name (use llama-server's, as `llama-server --list-devices` prints it: Vulkan0, CUDA1)", "device_memory_limit")
		case n < 0:
			p.add("must not be negative (leave the device out for its own memory)", "device_memory_limit", dev)
		case n < MiB:
			p.add(noUnit(n), "device_memory_limit", dev)
		}
	}
	if c.MaxLoaded < 0 {
		p.add("must not be negative (0 = no cap)", "max_loaded")
	}
}

// checkDurations checks the server's durations: an idle time may be off (0 or "-1"), a limit may
// be none ("-1") but not 0, and the stop timeout must be some time.
func (c Config) checkDurations(p *problems) {
	for _, t := range []struct {
		d     Duration
		key   string
		limit bool // 0 is not allowed, "-1" is no limit
	}{
		{c.IdleSleep, "idle_sleep", false},
		{c.IdleUnload, "idle_unload", false},
		{c.FairWait, "fair_wait", false},
		{c.QueueTimeout, "queue_timeout", true},
		{c.LoadTimeout, "load_timeout", true},
	} {
		switch {
		case t.limit && t.d == 0:
			p.add("must not be 0; use \"-1\" for no limit", t.key)
		case t.d < 0 && t.d != Never && t.limit:
			p.add("negative durations are not allowed; use \"-1\" for no limit", t.key)
		case t.d < 0 && t.d != Never:
			p.add(negativeIdle, t.key)
		}
	}
	if c.StopTimeout <= 0 {
		p.add("must be longer than 0, like \"10s\"", "stop_timeout")
	}
}

// negativeIdle is the reason for a negative idle time other than "-1".
const negativeIdle = "negative durations are not allowed; use \"-1\" or \"0\" for off"

// checkAccess checks what the server lets in: the body limit, keys, hosts, origins, and its log.
func (c Config) checkAccess(p *problems) {
	if c.BodyLimit < KiB {
		p.add(fmt.Sprintf("%s is too small; use at least 1KiB, like \"64MiB\"", c.BodyLimit), "body_limit")
	}
	for _, k := range c.APIKeys {
		if strings.TrimSpace(k) == "" || strings.ContainsAny(k, " \t\r\n") {
			p.add("API keys must be non-empty and contain no spaces", "api_keys")
		}
	}
	for _, h := range c.AllowedHosts {
		if strings.TrimSpace(h) == "" || strings.ContainsAny(h, " \t\r\n/") {
			p.add(fmt.Sprintf("%q is not a host name", h), "allowed_hosts")
		}
	}
	for _, o := range c.CORSOrigins {
		if err := checkOrigin(o); err != nil {
			p.add(err.Error(), "cors_origins")
		}
	}
	switch strings.ToLower(c.LogLevel) {
	case "debug", "info", "warn", "error":
	default:
		p.add(fmt.Sprintf("%q is not a log level; use debug, info, warn or error", c.LogLevel), "log_level")
	}
}

// checkDefaults checks [defaults], whose values every model inherits, as a section's are checked;
// only its flash_attn must be set.
func checkDefaults(d ChildDefaults, p *problems) {
	if d.FlashAttn == "" {
		p.add(`"" is not allowed; use "auto", "on" or "off"`, "defaults", "flash_attn")
	}
	zero := map[string]string{"ctx_size": "the model's trained context length", "parallel": "llama-server's default"}
	m := Model{CtxSize: d.CtxSize, GPULayers: d.GPULayers, FlashAttn: d.FlashAttn, Parallel: d.Parallel, Args: d.Args}
	checkSection(m, func(k string) string { return zero[k] }, p.add, "defaults")
}

// validateModels checks every [models."ID"] section and its variants.
func (c Config) validateModels(p *problems) {
	ids := slices.Sorted(maps.Keys(c.Models))
	names := modelNames{p: p, ids: map[string]bool{}, aliasOwner: map[string]string{}}
	for _, id := range ids {
		names.ids[id] = true
		for _, name := range c.VariantNames(id) {
			names.ids[VariantID(id, name)] = true
		}
	}
	for _, id := range ids {
		m := c.Models[id]
		if strings.TrimSpace(id) == "" {
			p.add("a model ID must not be empty", "models", id)
			continue
		}
		if base, name, ok := c.Variant(id); ok {
			p.add(fmt.Sprintf("%s is the variant %q of %s; its settings go in [models.%q.variants.%q]", id, name, base, base, name), "models", id)
			continue
		}
		names.check(id, m, []string{"models", id})
		checkSection(m, func(k string) string { return "[defaults]." + k }, p.add, "models", id)
		for _, name := range c.VariantNames(id) {
			v, key := m.Variants[name], []string{"models", id, "variants", name}
			if err := checkVariantName(name); err != nil {
				p.add(err.Error(), key...)
				continue
			}
			for _, sub := range slices.Sorted(maps.Keys(v.Variants)) {
				p.add("a variant cannot have variants of its own; add them to the model", append(slices.Clone(key), "variants", sub)...)
			}
			names.check(VariantID(id, name), v, key)
			checkSection(v, func(k string) string { return "the model's " + k }, p.add, key...)
		}
	}
}

// modelNames checks the names models are called by: no alias is another model's ID or another
// model's alias too, and no tag is empty or holds a comma.
type modelNames struct {
	p          *problems
	ids        map[string]bool   // every model ID the file names: the models' and their variants'
	aliasOwner map[string]string // alias → the model it names, of those checked so far
}

// check checks the aliases and tags of the model or variant id, whose section is at key.
func (n modelNames) check(id string, m Model, key []string) {
	for _, a := range m.Aliases {
		switch {
		case strings.TrimSpace(a) == "":
			n.p.add("aliases must not be empty", append(key, "aliases")...)
		case a == id:
		case n.ids[a]:
			n.p.add(fmt.Sprintf("alias %q is the ID of another model", a), append(key, "aliases")...)
		case n.aliasOwner[a] != "" && n.aliasOwner[a] != id:
			n.p.add(fmt.Sprintf("alias %q is also an alias of %q", a, n.aliasOwner[a]), append(key, "aliases")...)
		default:
			n.aliasOwner[a] = id
		}
	}
	for _, t := range m.Tags {
		if strings.TrimSpace(t) == "" || strings.Contains(t, ",") {
			n.p.add(fmt.Sprintf("tag %q must not be empty nor hold a comma", t), append(key, "tags")...)
		}
	}
}

// checkSection checks the values of one [models."ID"] or variant section at key. zero says what
// 0 means for a key: where its unset value comes from.
func checkSection(m Model, zero func(key string) string, bad func(reason string, key ...string), key ...string) {
	at := func(k string) []string { return append(slices.Clone(key), k) }
	if m.CtxSize < 0 {
		bad(fmt.Sprintf("must not be negative (0 = %s)", zero("ctx_size")), at("ctx_size")...)
	}
	if m.GPULayers != nil && *m.GPULayers < -1 {
		bad("must be -1 (all layers) or more", at("gpu_layers")...)
	}
	for i, d := range []*Duration{m.IdleSleep, m.IdleUnload} {
		if d != nil && *d < 0 && *d != Never {
			bad(negativeIdle, at([]string{"idle_sleep", "idle_unload"}[i])...)
		}
	}
	if err := checkArgs(m.Args); err != nil {
		bad(err.Error(), at("args")...)
	}
	switch m.FlashAttn {
	case "", "auto", "on", "off":
	default:
		bad(fmt.Sprintf("%q is not allowed; use \"auto\", \"on\" or \"off\"", m.FlashAttn), at("flash_attn")...)
	}
	if m.Parallel < 0 {
		bad(fmt.Sprintf("must not be negative (0 = %s)", zero("parallel")), at("parallel")...)
	}
	if m.CacheType != "" && !slices.Contains(CacheTypes, m.CacheType) {
		bad(fmt.Sprintf("%q is not a KV cache type; use one of %s", m.CacheType, strings.Join(CacheTypes, ", ")), at("cache_type")...)
	}
	checkRules(m, bad, at)
}

func checkListen(s string) error {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return fmt.Errorf("%q is not host:port, like \"127.0.0.1:8080\"", s)
	}
	if !validPort(port) {
		return fmt.Errorf("port %q must be a number from 1 to 65535", port)
	}
	if strings.ContainsAny(host, " \t/") {
		return fmt.Errorf("%q is not a host name or IP address", host)
	}
	return nil
}

func checkOrigin(o string) error {
	if o == "*" {
		return nil
	}
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return fmt.Errorf("%q is not an origin; use \"*\" or a value like \"http://localhost:3000\"", o)
	}
	return nil
}

func checkArgs(args []string) error {
	for _, a := range args {
		name, _, _ := strings.Cut(a, "=")
		if owner, ok := reservedArgs[name]; ok {
			return fmt.Errorf("%s is set by Llamatray (from %s); remove it from args", name, owner)
		}
	}
	return nil
}
