package main

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
)

// options is the part of llama-server's command line the fake understands.
type options struct {
	model     string        // -m/--model, required; never parsed
	host      string        // --host
	port      int           // --port (0 picks a free port)
	ctxSize   int           // -c/--ctx-size; 0 = the "model's" training context
	aliases   []string      // --alias, comma-separated; the first is the model's id
	mmproj    string        // --mmproj
	sleepIdle time.Duration // --sleep-idle-seconds; 0 = off
	parallel  int           // -np/--parallel; -1 = auto (4)
	gpuLayers string        // -ngl/--n-gpu-layers
	fit       bool          // -fit/--fit on|off (default on): fit unset arguments (the layers offloaded) in device memory
	fitTarget []int64       // -fitt/--fit-target MiB0,MiB1,...: the margin --fit leaves free per device, in bytes; one value is every device's (default 1024 MiB)
	flashAttn string        // -fa/--flash-attn
	version   bool          // --version
	logPrefix bool          // --[no-]log-prefix: level letter on log lines (default on)
	logTimes  bool          // --[no-]log-timestamps: time on log lines (default on)
	help      bool          // -h/--help
	listDevs  bool          // --list-devices: printed when read, so only the --rpc before it counts
	rpc       []string      // --rpc HOST:PORT,...: llama.cpp rpc-servers whose devices the model also uses
	ignored   []string      // unknown flags (and their values), tolerated
}

// valueFlags maps every spelling of a flag that takes a value to its canonical name.
var valueFlags = map[string]string{
	"-m":                   "model",
	"--model":              "model",
	"--host":               "host",
	"--port":               "port",
	"-c":                   "ctx-size",
	"--ctx-size":           "ctx-size",
	"-a":                   "alias",
	"--alias":              "alias",
	"-mm":                  "mmproj",
	"--mmproj":             "mmproj",
	"--sleep-idle-seconds": "sleep-idle-seconds",
	"-np":                  "parallel",
	"--parallel":           "parallel",
	"-ngl":                 "n-gpu-layers",
	"--n-gpu-layers":       "n-gpu-layers",
	"--gpu-layers":         "n-gpu-layers",
	"-fit":                 "fit",
	"--fit":                "fit",
	"-fitt":                "fit-target",
	"--fit-target":         "fit-target",
	"--rpc":                "rpc",
}

// optionalValueFlags take a value only when the next argument looks like one
// (old llama-server builds had a bare -fa, new ones take on|off|auto).
var optionalValueFlags = map[string]string{
	"-fa":          "flash-attn",
	"--flash-attn": "flash-attn",
}

// boolFlags never take a value.
var boolFlags = map[string]string{
	"--version":      "version",
	"--list-devices": "list-devices",
	"-h":             "help",
	"--help":         "help",
	// log format switches
	"--log-prefix":        "log-prefix",
	"--no-log-prefix":     "no-log-prefix",
	"--log-timestamps":    "log-timestamps",
	"--no-log-timestamps": "no-log-timestamps",
}

// parseArgs parses a llama-server command line by hand: the standard flag
// package cannot tolerate unknown flags. An unknown flag consumes the next
// argument when that argument does not look like a flag.
func parseArgs(args []string) (options, error) {
	o := options{host: "127.0.0.1", port: 8080, parallel: -1, flashAttn: "auto", gpuLayers: "auto", fit: true, logPrefix: true, logTimes: true}
	for i := 0; i < len(args); i++ {
		arg := args[i]
		name, inline, hasInline := strings.Cut(arg, "=")
		if !strings.HasPrefix(arg, "-") {
			return o, fmt.Errorf("unexpected argument %q (llama-server takes no positional arguments)", arg)
		}
		if canon, ok := boolFlags[name]; ok {
			if hasInline {
				return o, fmt.Errorf("argument %s takes no value", name)
			}
			switch canon {
			case "version":
				o.version = true
			case "help":
				o.help = true
			case "list-devices":
				// llama-server lists the devices (and exits) as it reads the flag: the arguments
				// after it are never read.
				o.listDevs = true
				return o, nil
			case "log-prefix", "no-log-prefix":
				o.logPrefix = canon == "log-prefix"
			case "log-timestamps", "no-log-timestamps":
				o.logTimes = canon == "log-timestamps"
			}
			continue
		}
		if canon, ok := optionalValueFlags[name]; ok {
			value := "on"
			switch {
			case hasInline:
				value = inline
			case i+1 < len(args) && looksLikeValue(args[i+1]):
				i++
				value = args[i]
			}
			if canon == "flash-attn" {
				o.flashAttn = value
			}
			continue
		}
		canon, ok := valueFlags[name]
		if !ok {
			o.ignored = append(o.ignored, arg)
			if !hasInline && i+1 < len(args) && looksLikeValue(args[i+1]) {
				i++
				o.ignored = append(o.ignored, args[i])
			}
			continue
		}
		value := inline
		if !hasInline {
			if i+1 >= len(args) {
				return o, fmt.Errorf("expected value for argument %s", name)
			}
			i++
			value = args[i]
		}
		if err := o.set(canon, value); err != nil {
			return o, fmt.Errorf("error while handling argument %q: %w", name, err)
		}
	}
	if o.help || o.version || o.listDevs {
		return o, nil
	}
	if o.model == "" {
		return o, fmt.Errorf("--model is required (this fake llama-server has no router mode)")
	}
	return o, nil
}

// looksLikeValue reports whether an argument after an unknown flag is its value:
// anything not starting with '-', or a negative number.
func looksLikeValue(s string) bool {
	if !strings.HasPrefix(s, "-") {
		return true
	}
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

// set stores one flag's value.
func (o *options) set(canon, value string) error {
	switch canon {
	case "model":
		if value == "" {
			return fmt.Errorf("empty model path")
		}
		o.model = value
	case "host":
		o.host = value
	case "port":
		p, err := strconv.Atoi(value)
		if err != nil || p < 0 || p > 65535 {
			return fmt.Errorf("invalid port %q", value)
		}
		o.port = p
	case "ctx-size":
		n, err := strconv.Atoi(value)
		if err != nil || n < 0 {
			return fmt.Errorf("invalid context size %q", value)
		}
		o.ctxSize = n
	case "alias":
		o.aliases = nil
		for _, a := range strings.Split(value, ",") {
			if a = strings.TrimSpace(a); a != "" {
				o.aliases = append(o.aliases, a)
			}
		}
	case "mmproj":
		o.mmproj = value
	case "rpc":
		o.rpc = nil
		for _, e := range strings.Split(value, ",") {
			if _, _, err := net.SplitHostPort(strings.TrimSpace(e)); err != nil {
				return fmt.Errorf("invalid RPC server %q: %w", e, err)
			}
			o.rpc = append(o.rpc, strings.TrimSpace(e))
		}
	case "sleep-idle-seconds":
		// llama-server takes whole seconds; the fake also accepts fractions so tests stay fast.
		f, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return fmt.Errorf("invalid value %q", value)
		}
		if f == 0 || f < -1 {
			return fmt.Errorf("invalid value: cannot be 0 or less than -1")
		}
		o.sleepIdle = 0
		if f > 0 {
			o.sleepIdle = time.Duration(f * float64(time.Second))
		}
	case "parallel":
		n, err := strconv.Atoi(value)
		if err != nil || n == 0 || n < -1 {
			return fmt.Errorf("invalid number of slots %q", value)
		}
		o.parallel = n
	case "n-gpu-layers":
		o.gpuLayers = value
	case "fit":
		switch value {
		case "on":
			o.fit = true
		case "off":
			o.fit = false
		default:
			return fmt.Errorf("invalid value %q: want on or off", value)
		}
	case "fit-target":
		o.fitTarget = nil
		for _, f := range strings.Split(value, ",") {
			n, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64)
			if err != nil || n < 0 {
				return fmt.Errorf("invalid fit target %q: want MiB per device, comma-separated", value)
			}
			o.fitTarget = append(o.fitTarget, n<<20)
		}
	}
	return nil
}
