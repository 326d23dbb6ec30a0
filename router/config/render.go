package config

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/llamatray/llamatray/router/atomicfile"
)

const fileHeader = `# Llamatray configuration.
#
# Written with the defaults on first run. Edit it and restart Llamatray, or use Settings
# (which rewrites this file with these comments).
#
# Sizes: a number of bytes or a number with a unit: "512MiB", "6GiB", "1.5G". KiB/MiB/GiB/TiB
#   and K/M/G/T are powers of 1024; KB/MB/GB/TB are powers of 1000 ("8GB" = 8,000,000,000 bytes).
# Durations: a number with a unit (ms, s, m, h): "30s", "5m", "1h30m". Idle timers and
#   fair_wait take "0" for off (idle timers also accept "-1"); queue_timeout and load_timeout
#   take "-1" for no limit.
`

// item is one documented key of the rendered file.
type item struct {
	comment string // lines, without "# "
	key     string
	value   string // TOML text
	off     bool   // written commented out, showing an example value
}

// DefaultFileText returns the commented config file written on first run.
func DefaultFileText() string {
	text, err := Default().render()
	if err != nil { // the defaults are plain ASCII
		panic(err)
	}
	return text
}

// Save validates the configuration and writes it to path as commented TOML, atomically (a
// temporary file in the same folder, then a rename). A symlinked config file is replaced at its
// target. The file is readable only by its owner, since it may hold API keys.
func (c Config) Save(path string) error {
	if err := c.Validate(); err != nil {
		return fmt.Errorf("config: not saved: %w", err)
	}
	text, err := c.render()
	if err != nil {
		return fmt.Errorf("config: not saved: %w", err)
	}
	if err := writeFileAtomic(path, []byte(text)); err != nil {
		return fmt.Errorf("config: save %s: %w", path, err)
	}
	return nil
}

func (c Config) render() (string, error) {
	var r renderer
	r.b.WriteString(fileHeader)
	r.items(c.serverItems(&r))
	r.defaults(c.Defaults)
	r.deviceLimits(c.DeviceMemoryLimit)
	r.renderWorkers(c.Workers)
	for _, id := range slices.Sorted(maps.Keys(c.Models)) {
		r.model(id, c.Models[id])
	}
	r.b.WriteString(modelExample)
	r.peers(c.Peers)
	if r.err != nil {
		return "", r.err
	}
	return r.b.String(), nil
}

// serverItems are the file's top-level settings, the server's, with their comments.
func (c Config) serverItems(r *renderer) []item {
	return []item{
		{comment: "Address the router listens on (host:port). Anything but 127.0.0.1 or localhost makes it\nreachable from other machines: set api_keys too.", key: "listen", value: r.str(c.Listen)},
		{comment: "Extra folders to scan (recursively) for .gguf models. \"~\" is your home folder.", key: "model_dirs", value: r.list(c.ModelDirs)},
		{comment: "Also scan the usual folders: Llamatray's own models folder, LM Studio's (~/.lmstudio/models),\nllama.cpp's download cache ($LLAMA_CACHE) and the Hugging Face cache (~/.cache/huggingface/hub).", key: "scan_default_dirs", value: strconv.FormatBool(c.ScanDefaultDirs)},
		{comment: "Path of llama-server. Empty: found automatically.", key: "llama_server", value: r.str(c.LlamaServer)},
		{comment: "Once a day, install llama.cpp's newest release build when it is newer than the one\nLlamatray installed (running models keep theirs; new loads use it).", key: "llama_server_update", value: strconv.FormatBool(c.LlamaServerUpdate)},
		{comment: "Memory models may use together. \"0\": derived from this machine's memory.", key: "memory_limit", value: r.str(c.MemoryLimit.String())},
		{comment: "Memory always left free for everything else.", key: "memory_reserve", value: r.str(c.MemoryReserve.String())},
		{comment: "Most models loaded at once. 0: no cap, memory decides.", key: "max_loaded", value: strconv.Itoa(c.MaxLoaded)},
		{comment: "A model unused this long frees its weights but keeps its process, and wakes on the next\nrequest. \"0\" or \"-1\": never.", key: "idle_sleep", value: r.str(c.IdleSleep.String())},
		{comment: "A model unused this long is unloaded. \"0\" or \"-1\": never.", key: "idle_unload", value: r.str(c.IdleUnload.String())},
		{comment: "Longest a request waits for memory or a slot nothing will free before it fails (one waiting its turn gets fair_wait more). \"-1\": no limit.", key: "queue_timeout", value: r.str(c.QueueTimeout.String())},
		{comment: "Longest a waiting model is held back while other models keep serving, before busy models\nare drained to make room for it. \"0\": off.", key: "fair_wait", value: r.str(c.FairWait.String())},
		{comment: "Longest a model may take to load. \"-1\": no limit.", key: "load_timeout", value: r.str(c.LoadTimeout.String())},
		{comment: "How long a stopping llama-server gets before it is killed.", key: "stop_timeout", value: r.str(c.StopTimeout.String())},
		{comment: "Model used when a request names none. Empty: none.", key: "default_model", value: r.str(c.DefaultModel)},
		{comment: "Stream loading progress to clients while a model loads.", key: "stream_loading_progress", value: strconv.FormatBool(c.StreamLoadingProgress)},
		{comment: "Largest request body accepted.", key: "body_limit", value: r.str(c.BodyLimit.String())},
		{comment: "Bearer tokens accepted by the API. Empty: no authentication.", key: "api_keys", value: r.list(c.APIKeys)},
		{comment: "Host header values accepted besides localhost and the listen address (protects against\nDNS rebinding).", key: "allowed_hosts", value: r.list(c.AllowedHosts)},
		{comment: "Browser origins allowed to call the API, like \"http://localhost:3000\", or \"*\".", key: "cors_origins", value: r.list(c.CORSOrigins)},
		{comment: "Log detail: debug, info, warn or error.", key: "log_level", value: r.str(c.LogLevel)},
		{comment: "A request for an ORG/REPO:QUANT model that is not on this machine starts its download from\nthe Hugging Face Hub (it is answered 503 until the download is done). Off: it gets 404.", key: "auto_pull", value: strconv.FormatBool(c.AutoPull)},
		{comment: "A request for a model that is not running loads it. Off: it gets 400 \"model is not loaded\"\nunless it asks ?autoload=true (as llama.cpp's router with --no-models-autoload).", key: "models_autoload", value: strconv.FormatBool(c.ModelsAutoload)},
		{comment: "A llama.cpp router preset file (llama-server --models-preset), read in place and again when it\nchanges: a [section] per model with llama-server's argument names, [*] for every model.", key: "presets", value: r.str(c.Presets)},
		{comment: "Also answer on 127.0.0.1:11434, Ollama's own port, so that apps set up for Ollama work unchanged\n(Ollama's API is served on the main address too). Ollama itself must not be running.", key: "ollama_port", value: strconv.FormatBool(c.OllamaPort)},
		{comment: "Once a day, read the list of Llamatray's releases and say in the window and the tray when a newer\none exists. Nothing is downloaded or installed.", key: "update_check", value: strconv.FormatBool(c.UpdateCheck)},
		{comment: "Also offer pre-releases.", key: "update_prerelease", value: strconv.FormatBool(c.UpdatePrerelease)},
		{comment: "Lend this machine to other Llamatrays while this one runs (the tray's \"Lend this machine\"): llama.cpp's\nRPC server on 127.0.0.1, reachable only through Llamatray's link (TLS and the pairing token kept in\nthe state folder, shown in the window). Heads name it in a [workers.NAME] section.", key: "lend", value: strconv.FormatBool(c.Lend)},
		{comment: "The link's HOST:PORT while lending.", key: "lend_listen", value: r.str(c.LendListen)},
		{comment: "Look for other Llamatrays on the local network (mDNS, every minute): they are shown under \"Found on\nthis network\" and in `llamatray peer discover`, and become peers only when you add them.", key: "discover", value: strconv.FormatBool(c.Discover)},
		{comment: "Announce this Llamatray on the local network (mDNS: its name, version and port) so that others find\nit. Only while listen is not loopback: on 127.0.0.1 nothing is announced.", key: "advertise", value: strconv.FormatBool(c.Advertise)},
	}
}

// defaults writes [defaults], the settings every model starts with.
func (r *renderer) defaults(d ChildDefaults) {
	r.b.WriteString("\n# Settings every model starts with.\n[defaults]\n")
	gpu := item{comment: "Layers offloaded to the GPU (-ngl). -1: all. Unset: llama-server's default.", key: "gpu_layers", value: "-1", off: true}
	if d.GPULayers != nil {
		gpu.value, gpu.off = strconv.Itoa(*d.GPULayers), false
	}
	r.items([]item{
		{comment: "Context size in tokens (-c). 0: the model's trained context length.", key: "ctx_size", value: strconv.Itoa(d.CtxSize)},
		gpu,
		{comment: "Flash attention: \"auto\", \"on\" or \"off\".", key: "flash_attn", value: r.str(d.FlashAttn)},
		{comment: "Parallel slots per model (-np). 0: llama-server's default.", key: "parallel", value: strconv.Itoa(d.Parallel)},
		{comment: "Extra llama-server arguments for every model, like [\"--cache-type-k\", \"q8_0\"].", key: "args", value: r.list(d.Args)},
	})
}

// deviceLimits writes [device_memory_limit], or its commented example when there is none.
func (r *renderer) deviceLimits(limits map[string]Size) {
	r.b.WriteString(deviceComment)
	if len(limits) == 0 {
		r.b.WriteString("# [device_memory_limit]\n# Vulkan0 = \"1536MiB\"\n")
		return
	}
	r.b.WriteString("[device_memory_limit]\n")
	for _, d := range slices.Sorted(maps.Keys(limits)) {
		fmt.Fprintf(&r.b, "%s = %s\n", r.str(d), r.str(limits[d].String()))
	}
}

const deviceComment = `
# GPU memory models may hold together on each device, by llama-server's name for the device (as
# "llama-server --list-devices" prints it). Unset: the device's own memory (on Apple silicon, the
# Metal working-set limit). Each device is budgeted on its own.
`

const modelExample = `
# Per-model settings, by catalog ID (see "llamatray models"). Every key is optional.
# [models."qwen2.5-7b-instruct-q4_k_m"]
# aliases = ["qwen"]          # other names for this model
# tags = ["chat", "fast"]     # labels GET /models lists (as llama.cpp's --tags); not names
# ctx_size = 16384            # 0: [defaults].ctx_size
# gpu_layers = -1
# args = ["--jinja"]          # added after [defaults].args
# pinned = false              # true: never unloaded for memory or by idle timers
# load_on_start = false
# idle_sleep = "10m"          # unset: the global value
# idle_unload = "-1"
# hidden = false              # true: left out of model lists, still served by name
# flash_attn = "on"           # unset: [defaults].flash_attn
# parallel = 2                # slots (-np); unset: [defaults].parallel
# cache_type = "q8_0"         # KV cache type (-ctk, -ctv); unset: f16
# draft = "qwen2.5-0.5b-instruct-q8_0"   # a small model with the same vocabulary, for
#                             # speculative decoding (--model-draft); a catalog ID or ORG/REPO:QUANT
# draft_gpu_layers = -1       # the draft's -ngld; unset: llama-server's default
# draft_max = 16              # tokens drafted per step (--draft-max); unset: llama-server's
# workers = ["desk"]          # spread over these [workers.NAME] machines too (--rpc)
# set_params = { temperature = 0.2 }        # fields forced into every request's body
# strip_params = ["logit_bias"]             # fields removed from every request's body
# default_params = { top_k = 40, min_p = 0.05 }  # used when a request gives no value of its own
#
# Variants: more model IDs for the same file, "ID@NAME", each with its own settings. Unset keys
# come from the model's section above (args are added after its args); aliases, pinned,
# load_on_start and hidden are the variant's own. Names: letters, digits, '.', '-' and '_'.
# [models."qwen2.5-7b-instruct-q4_k_m".variants."32k"]    # serves "qwen2.5-7b-instruct-q4_k_m@32k"
# ctx_size = 32768
# cache_type = "q8_0"
`

func (r *renderer) model(id string, m Model) {
	fmt.Fprintf(&r.b, "\n[models.%s]\n", r.str(id))
	r.section(m)
	for _, name := range slices.Sorted(maps.Keys(m.Variants)) {
		fmt.Fprintf(&r.b, "\n[models.%s.variants.%s]\n", r.str(id), r.str(name))
		r.section(m.Variants[name])
	}
}

// section writes the keys of one model or variant section that are set; an empty list only for
// workers, where it says "none" (a variant's over its model's).
func (r *renderer) section(m Model) {
	v, t := reflect.ValueOf(m), reflect.TypeFor[Model]()
	for i := range v.NumField() {
		f, key := v.Field(i), t.Field(i).Tag.Get("toml")
		switch {
		case f.IsZero() || key == "variants":
			continue
		case (f.Kind() == reflect.Slice || f.Kind() == reflect.Map) && f.Len() == 0 && key != "workers":
			continue
		case f.Kind() == reflect.Pointer:
			f = f.Elem()
		}
		fmt.Fprintf(&r.b, "%s = %s\n", key, r.value(f.Interface()))
	}
}

// renderer builds the file text; the first string that TOML cannot hold sets err.
type renderer struct {
	b   strings.Builder
	err error
}

func (r *renderer) items(its []item) {
	for _, it := range its {
		r.b.WriteString("\n")
		for _, line := range strings.Split(it.comment, "\n") {
			r.b.WriteString("# " + line + "\n")
		}
		if it.off {
			r.b.WriteString("# ")
		}
		fmt.Fprintf(&r.b, "%s = %s\n", it.key, it.value)
	}
}

func (r *renderer) list(v []string) string {
	parts := make([]string, len(v))
	for i, s := range v {
		parts[i] = r.str(s)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// str quotes s as a TOML basic string.
func (r *renderer) str(s string) string {
	if !utf8.ValidString(s) {
		if r.err == nil {
			r.err = fmt.Errorf("%q is not valid UTF-8 text", s)
		}
		return `""`
	}
	var b strings.Builder
	b.WriteByte('"')
	for _, c := range s {
		switch c {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if c < 0x20 || c == 0x7f {
				fmt.Fprintf(&b, `\u%04X`, c)
			} else {
				b.WriteRune(c)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// writeFileAtomic replaces path (the file a link there points to, when it is one) with data.
func writeFileAtomic(path string, data []byte) error {
	if target, err := filepath.EvalSymlinks(path); err == nil {
		path = target
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return atomicfile.Write(path, data, 0o600)
}
