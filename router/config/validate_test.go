package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	intp := func(v int) *int { return &v }
	durp := func(v Duration) *Duration { return &v }
	tests := []struct {
		name   string
		change func(c *Config)
		want   string // "" = valid; else the key of the error
	}{
		{"default", func(c *Config) {}, ""},
		{"full", func(c *Config) { *c = fullConfig() }, ""},
		{"ipv6 listen", func(c *Config) { c.Listen = "[::1]:8080" }, ""},
		{"all interfaces", func(c *Config) { c.Listen = ":8080" }, ""},
		{"no port", func(c *Config) { c.Listen = "127.0.0.1" }, "listen"},
		{"port 0", func(c *Config) { c.Listen = "127.0.0.1:0" }, "listen"},
		{"port too big", func(c *Config) { c.Listen = "127.0.0.1:70000" }, "listen"},
		{"named port", func(c *Config) { c.Listen = "127.0.0.1:http" }, "listen"},
		{"empty model dir", func(c *Config) { c.ModelDirs = []string{" "} }, "model_dirs"},
		{"negative limit", func(c *Config) { c.MemoryLimit = -1 }, "memory_limit"},
		{"unitless limit", func(c *Config) { c.MemoryLimit = 8 }, "memory_limit"},
		{"negative reserve", func(c *Config) { c.MemoryReserve = -1 }, "memory_reserve"},
		{"device limit", func(c *Config) { c.DeviceMemoryLimit = map[string]Size{"Vulkan0": 1536 * MiB} }, ""},
		{"unitless device limit", func(c *Config) { c.DeviceMemoryLimit = map[string]Size{"CUDA0": 8} }, "device_memory_limit.CUDA0"},
		{"empty device name", func(c *Config) { c.DeviceMemoryLimit = map[string]Size{" ": GiB} }, "device_memory_limit"},
		{"reserve under limit", func(c *Config) { c.MemoryLimit, c.MemoryReserve = 8*GiB, 7*GiB }, ""},
		{"reserve equals limit", func(c *Config) { c.MemoryLimit, c.MemoryReserve = 8*GiB, 8*GiB }, "memory_reserve"},
		{"reserve without limit", func(c *Config) { c.MemoryReserve = 100 * GiB }, ""},
		{"negative max_loaded", func(c *Config) { c.MaxLoaded = -2 }, "max_loaded"},
		{"idle off", func(c *Config) { c.IdleSleep, c.IdleUnload, c.FairWait = 0, Never, 0 }, ""},
		{"odd negative idle", func(c *Config) { c.IdleUnload = Duration(-time.Minute) }, "idle_unload"},
		{"odd negative fair_wait", func(c *Config) { c.FairWait = -5 }, "fair_wait"},
		{"queue no limit", func(c *Config) { c.QueueTimeout = Never }, ""},
		{"queue zero", func(c *Config) { c.QueueTimeout = 0 }, "queue_timeout"},
		{"load odd negative", func(c *Config) { c.LoadTimeout = -3 }, "load_timeout"},
		{"stop zero", func(c *Config) { c.StopTimeout = 0 }, "stop_timeout"},
		{"stop never", func(c *Config) { c.StopTimeout = Never }, "stop_timeout"},
		{"tiny body", func(c *Config) { c.BodyLimit = 100 }, "body_limit"},
		{"empty api key", func(c *Config) { c.APIKeys = []string{""} }, "api_keys"},
		{"api key with space", func(c *Config) { c.APIKeys = []string{"a b"} }, "api_keys"},
		{"bad host", func(c *Config) { c.AllowedHosts = []string{"http://x/"} }, "allowed_hosts"},
		{"origin star", func(c *Config) { c.CORSOrigins = []string{"*"} }, ""},
		{"origin with path", func(c *Config) { c.CORSOrigins = []string{"http://x.com/app"} }, "cors_origins"},
		{"origin no scheme", func(c *Config) { c.CORSOrigins = []string{"localhost:3000"} }, "cors_origins"},
		{"log level upper", func(c *Config) { c.LogLevel = "WARN" }, ""},
		{"log level bad", func(c *Config) { c.LogLevel = "verbose" }, "log_level"},
		{"ctx zero", func(c *Config) { c.Defaults.CtxSize = 0 }, ""},
		{"ctx negative", func(c *Config) { c.Defaults.CtxSize = -1 }, "defaults.ctx_size"},
		{"gpu all", func(c *Config) { c.Defaults.GPULayers = intp(-1) }, ""},
		{"gpu bad", func(c *Config) { c.Defaults.GPULayers = intp(-2) }, "defaults.gpu_layers"},
		{"flash empty", func(c *Config) { c.Defaults.FlashAttn = "" }, "defaults.flash_attn"},
		{"parallel negative", func(c *Config) { c.Defaults.Parallel = -1 }, "defaults.parallel"},
		{"reserved arg", func(c *Config) { c.Defaults.Args = []string{"--port=9000"} }, "defaults.args"},
		{"reserved -c", func(c *Config) { c.Defaults.Args = []string{"-c", "8192"} }, "defaults.args"},
		{"model ok", func(c *Config) {
			c.Models = map[string]Model{"m": {Aliases: []string{"m", "x"}, IdleSleep: durp(Never), GPULayers: intp(0)}}
		}, ""},
		{"model empty id", func(c *Config) { c.Models = map[string]Model{"": {}} }, "models."},
		{"model idle_sleep", func(c *Config) { c.Models = map[string]Model{"m": {IdleSleep: durp(-2)}} }, "models.m.idle_sleep"},
		{"model idle_unload", func(c *Config) { c.Models = map[string]Model{"m": {IdleUnload: durp(-2)}} }, "models.m.idle_unload"},
		{"model idle never", func(c *Config) { c.Models = map[string]Model{"m": {IdleSleep: durp(Never), IdleUnload: durp(Never)}} }, ""},
		{"model flash_attn", func(c *Config) { c.Models = map[string]Model{"m": {FlashAttn: "yes"}} }, "models.m.flash_attn"},
		{"model parallel", func(c *Config) { c.Models = map[string]Model{"m": {Parallel: -1}} }, "models.m.parallel"},
		{"model cache_type", func(c *Config) { c.Models = map[string]Model{"m": {CacheType: "q3"}} }, "models.m.cache_type"},
		{"model empty alias", func(c *Config) { c.Models = map[string]Model{"m": {Aliases: []string{""}}} }, "models.m.aliases"},
		{"alias is other id", func(c *Config) { c.Models = map[string]Model{"a": {}, "b": {Aliases: []string{"a"}}} }, "models.b.aliases"},
		{"alias twice", func(c *Config) {
			c.Models = map[string]Model{"a": {Aliases: []string{"x"}}, "b": {Aliases: []string{"x"}}}
		}, "models.b.aliases"},
		{"model ctx negative", func(c *Config) { c.Models = map[string]Model{"m": {CtxSize: -1}} }, "models.m.ctx_size"},
		{"model gpu bad", func(c *Config) { c.Models = map[string]Model{"m": {GPULayers: intp(-3)}} }, "models.m.gpu_layers"},
		{"model idle bad", func(c *Config) { c.Models = map[string]Model{"m": {IdleUnload: durp(-7)}} }, "models.m.idle_unload"},
		{"model reserved arg", func(c *Config) { c.Models = map[string]Model{"m": {Args: []string{"-m", "x.gguf"}}} }, "models.m.args"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Default()
			tt.change(&c)
			err := c.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate accepted it; want an error for %q", tt.want)
			}
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("want a *FieldError, got %T: %v", err, err)
			}
			if got := strings.Join(fe.Key, "."); got != tt.want {
				t.Errorf("error key %q, want %q (%v)", got, tt.want, err)
			}
		})
	}
}
