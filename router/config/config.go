// Package config reads, checks and writes the Llamatray configuration file (TOML) and knows the
// platform directories for config, state, logs and models.
package config

import (
	"cmp"
	"reflect"
	"slices"
	"time"
)

// ChildDefaults are the llama-server settings every model starts with ([defaults]).
type ChildDefaults struct {
	CtxSize   int      `toml:"ctx_size"`   // -c; default 4096; 0 = the model's trained context length
	GPULayers *int     `toml:"gpu_layers"` // -ngl; nil = llama-server's default; -1 = all layers
	FlashAttn string   `toml:"flash_attn"` // "auto" (default), "on", "off"
	Parallel  int      `toml:"parallel"`   // -np; 0 = llama-server's default
	Args      []string `toml:"args"`       // extra llama-server arguments for every model
}

// Model is one [models."ID"] section: settings for a single catalog entry. Save writes the keys
// in the order of its fields.
type Model struct {
	Aliases     []string  `toml:"aliases"`       // other names that resolve to this model
	Tags        []string  `toml:"tags"`          // labels listed in GET /models' tags (llama.cpp's --tags); not names
	CtxSize     int       `toml:"ctx_size"`      // 0 = [defaults].ctx_size
	GPULayers   *int      `toml:"gpu_layers"`    // nil = [defaults].gpu_layers; -1 = all
	Args        []string  `toml:"args"`          // extra llama-server arguments, after [defaults].args
	Pinned      bool      `toml:"pinned"`        // never evicted by pressure or idle timers
	LoadOnStart bool      `toml:"load_on_start"` // loaded when Llamatray starts
	IdleSleep   *Duration `toml:"idle_sleep"`    // nil = the global idle_sleep
	IdleUnload  *Duration `toml:"idle_unload"`   // nil = the global idle_unload
	Hidden      bool      `toml:"hidden"`        // left out of model lists; still served by name
	FlashAttn   string    `toml:"flash_attn"`    // "" = [defaults].flash_attn; "auto", "on", "off"
	Parallel    int       `toml:"parallel"`      // -np; 0 = [defaults].parallel
	CacheType   string    `toml:"cache_type"`    // KV cache type, -ctk and -ctv; "" = llama-server's (f16)
	// Draft is another model (a catalog ID or a Hub name, ORG/REPO:QUANT) the child loads with
	// --model-draft for speculative decoding; "" = none. Its vocabulary must match this model's.
	Draft          string `toml:"draft"`
	DraftGPULayers *int   `toml:"draft_gpu_layers"` // -ngld; nil = llama-server's default; -1 = all
	DraftMax       int    `toml:"draft_max"`        // --draft-max, tokens drafted per step; 0 = llama-server's
	// Workers are [workers.NAME] sections this model is spread over (llama.cpp's --rpc); none: this
	// machine only (workers.go).
	Workers []string `toml:"workers"`
	// Request rules, applied to the JSON body of every request for this model, whatever API it
	// speaks, before it is proxied. SetParams' fields replace the request's; StripParams' are
	// removed; DefaultParams' are added when the request gives none of that name.
	SetParams     map[string]any `toml:"set_params"`
	StripParams   []string       `toml:"strip_params"`
	DefaultParams map[string]any `toml:"default_params"`
	// Variants are more model IDs, "ID@NAME", for the same file, each with its own settings layered
	// over this section ([models."ID".variants."NAME"]; see variants.go). Only a model has them.
	Variants map[string]Model `toml:"variants"`
}

// CacheTypes are the KV cache types llama-server accepts for -ctk and -ctv.
var CacheTypes = []string{"f16", "f32", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1"}

// Config is the whole configuration file.
type Config struct {
	Listen                string            `toml:"listen"`                  // host:port of the router
	ModelDirs             []string          `toml:"model_dirs"`              // extra model folders; "~" expanded
	ScanDefaultDirs       bool              `toml:"scan_default_dirs"`       // also scan the usual model folders
	LlamaServer           string            `toml:"llama_server"`            // llama-server path; "" = find it
	LlamaServerUpdate     bool              `toml:"llama_server_update"`     // daily: install llama.cpp's newer build
	MemoryLimit           Size              `toml:"memory_limit"`            // 0 = derived from the machine
	MemoryReserve         Size              `toml:"memory_reserve"`          // kept free for everything else
	MaxLoaded             int               `toml:"max_loaded"`              // 0 = no cap
	IdleSleep             Duration          `toml:"idle_sleep"`              // 0/-1 = off
	IdleUnload            Duration          `toml:"idle_unload"`             // 0/-1 = off
	QueueTimeout          Duration          `toml:"queue_timeout"`           // -1 = no limit
	FairWait              Duration          `toml:"fair_wait"`               // 0 = off
	LoadTimeout           Duration          `toml:"load_timeout"`            // -1 = no limit
	StopTimeout           Duration          `toml:"stop_timeout"`            // > 0
	DefaultModel          string            `toml:"default_model"`           // used when a request names none
	StreamLoadingProgress bool              `toml:"stream_loading_progress"` // stream load progress to clients
	BodyLimit             Size              `toml:"body_limit"`              // largest request body
	APIKeys               []string          `toml:"api_keys"`                // empty = no authentication
	AllowedHosts          []string          `toml:"allowed_hosts"`           // extra Host header values
	CORSOrigins           []string          `toml:"cors_origins"`            // browser origins allowed
	LogLevel              string            `toml:"log_level"`               // debug|info|warn|error
	AutoPull              bool              `toml:"auto_pull"`               // a request for a missing ORG/REPO:QUANT starts its download
	ModelsAutoload        bool              `toml:"models_autoload"`         // a request loads its model; false: 400 unless it asks ?autoload=true
	Presets               string            `toml:"presets"`                 // llama.cpp's router preset INI, read in place (presets.go); "" = none
	OllamaPort            bool              `toml:"ollama_port"`             // also listen on 127.0.0.1:11434, Ollama's port
	UpdateCheck           bool              `toml:"update_check"`            // daily: read Llamatray's releases list and say when a newer one exists
	UpdatePrerelease      bool              `toml:"update_prerelease"`       // also offer pre-releases
	Lend                  bool              `toml:"lend"`                    // lend this machine to other Llamatrays (as the worker command does)
	LendListen            string            `toml:"lend_listen"`             // HOST:PORT of the link while lending
	Discover              bool              `toml:"discover"`                // look for other Llamatrays on the local network (mDNS); they are offered, never added
	Advertise             bool              `toml:"advertise"`               // announce this one on the local network while listen is not loopback
	DeviceMemoryLimit     map[string]Size   `toml:"device_memory_limit"`     // GPU memory models may use per device, by llama-server's device name (Vulkan0, CUDA1)
	Workers               map[string]Worker `toml:"workers"`                 // other machines' devices, by name (workers.go)
	Defaults              ChildDefaults     `toml:"defaults"`
	Models                map[string]Model  `toml:"models"`
	Peers                 map[string]Peer   `toml:"peers"` // other machines' servers, by name (workers.go)

	presets *Presets // the file Presets names, as read (WithPresets); never written
}

// Default returns the built-in configuration.
func Default() Config {
	return Config{
		Listen:          "127.0.0.1:8080",
		ScanDefaultDirs: true,
		MemoryReserve:   1 * GiB,
		IdleSleep:       Duration(5 * time.Minute),
		IdleUnload:      Duration(30 * time.Minute),
		QueueTimeout:    Duration(2 * time.Minute),
		FairWait:        Duration(30 * time.Second),
		LoadTimeout:     Duration(5 * time.Minute),
		StopTimeout:     Duration(10 * time.Second),
		BodyLimit:       64 * MiB,
		LogLevel:        "info",
		UpdateCheck:     true,
		ModelsAutoload:  true,
		Discover:        true,
		Advertise:       true,
		LendListen:      DefaultLendListen,
		Defaults: ChildDefaults{
			CtxSize:   4096,
			FlashAttn: "auto",
		},
	}
}

// ModelSettings returns the settings for one model: its [models."id"] section with every unset
// field filled from [defaults] and the global timers. Args are [defaults].args followed by the
// model's own (llama-server keeps the last value of a repeated flag). For a variant ("ID@NAME")
// its section is first layered over its model's (see Layered). The result shares no memory with
// c and has no Variants.
func (c Config) ModelSettings(id string) Model {
	m, _ := c.Layered(id)
	if p := c.presets; p != nil {
		m = overlay(overlay(p.All, p.Models[id]), m)
	}
	out := deepCopy(m)
	out.Variants = nil
	out.Args = append(slices.Clone(c.Defaults.Args), m.Args...)
	if len(out.Args) == 0 {
		out.Args = nil
	}
	if len(out.Aliases) == 0 {
		out.Aliases = nil
	}
	out.CtxSize = cmp.Or(out.CtxSize, c.Defaults.CtxSize)
	out.FlashAttn = cmp.Or(out.FlashAttn, c.Defaults.FlashAttn)
	out.Parallel = cmp.Or(out.Parallel, c.Defaults.Parallel)
	out.GPULayers = cmp.Or(out.GPULayers, deepCopy(c.Defaults.GPULayers))
	out.IdleSleep = cmp.Or(out.IdleSleep, ptr(c.IdleSleep))
	out.IdleUnload = cmp.Or(out.IdleUnload, ptr(c.IdleUnload))
	return out
}

func ptr[T any](v T) *T { return &v }

// Clone is a copy of c that shares no memory with it: a change made to the copy (a model's
// section, a list, a variant) leaves c as it was. Service.Edit hands one to each change.
func (c Config) Clone() Config { return deepCopy(c) }

// deepCopy is a copy of v that shares no memory with it, but for what unexported fields hold (a
// Config's presets, which are never changed).
func deepCopy[T any](v T) T { return copyValue(reflect.ValueOf(&v).Elem()).Interface().(T) }

func copyValue(v reflect.Value) reflect.Value {
	switch v.Kind() {
	case reflect.Interface:
		if !v.IsNil() {
			return copyValue(v.Elem())
		}
	case reflect.Pointer:
		if !v.IsNil() {
			p := reflect.New(v.Type().Elem())
			p.Elem().Set(copyValue(v.Elem()))
			return p
		}
	case reflect.Slice:
		if !v.IsNil() {
			s := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
			for i := range v.Len() {
				s.Index(i).Set(copyValue(v.Index(i)))
			}
			return s
		}
	case reflect.Map:
		if !v.IsNil() {
			m := reflect.MakeMapWithSize(v.Type(), v.Len())
			for it := v.MapRange(); it.Next(); {
				m.SetMapIndex(it.Key(), copyValue(it.Value()))
			}
			return m
		}
	case reflect.Struct:
		s := reflect.New(v.Type()).Elem()
		s.Set(v)
		for i := range v.NumField() {
			if s.Field(i).CanSet() {
				s.Field(i).Set(copyValue(v.Field(i)))
			}
		}
		return s
	}
	return v
}
