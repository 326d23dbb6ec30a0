package config

// llama-swap's config.yaml taken in: each model whose cmd runs llama-server becomes the model of the
// GGUF file it names (its llama-swap ID and aliases its aliases), with the settings Llamatray has
// (context, GPU layers, flash attention, slots, other arguments, ttl, unlisted, stripParams,
// setParams, a persistent group's pin, a preload) and its file in model_dirs. What cannot be carried
// over is listed with why. A file that does not read changes nothing.

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// swapFile is the part of llama-swap's configuration an import reads.
type swapFile struct {
	Models             map[string]swapModel `yaml:"models"`
	Macros             yaml.Node            `yaml:"macros"`
	Groups             map[string]swapGroup `yaml:"groups"`
	GlobalTTL          int                  `yaml:"globalTTL"`
	HealthCheckTimeout int                  `yaml:"healthCheckTimeout"`
	APIKeys            []string             `yaml:"apiKeys"`
	Hooks              struct {
		OnStartup struct {
			Preload []string `yaml:"preload"`
		} `yaml:"on_startup"`
	} `yaml:"hooks"`
	Rest map[string]any `yaml:",inline"`
}

type swapModel struct {
	Cmd      string         `yaml:"cmd"`
	Aliases  []yaml.Node    `yaml:"aliases"` // a name, or {id, name, unlisted}
	TTL      *int           `yaml:"ttl"`
	Unlisted bool           `yaml:"unlisted"`
	Macros   yaml.Node      `yaml:"macros"`
	Filters  map[string]any `yaml:"filters"`
	Rest     map[string]any `yaml:",inline"`
}

type swapGroup struct {
	Persistent bool     `yaml:"persistent"`
	Members    []string `yaml:"members"`
}

// swapMacro is ${name} in a llama-swap cmd.
var swapMacro = regexp.MustCompile(`\$\{([A-Za-z0-9_.-]+)\}`)

// ImportLlamaSwap returns c with what llama-swap's configuration (name is used in errors) can
// express, and the list of what it could not carry over, each "what: why". An error (the YAML, a
// model without cmd, an unknown macro, a result that does not validate) means nothing was taken.
func (c Config) ImportLlamaSwap(name string, data []byte) (Config, []string, error) {
	var f swapFile
	if err := yaml.Unmarshal(data, &f); err != nil {
		return c, nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(f.Models) == 0 {
		return c, nil, fmt.Errorf("%s: no models", name)
	}
	global, err := swapMacros(&f.Macros, nil)
	if err != nil {
		return c, nil, fmt.Errorf("%s: macros: %w", name, err)
	}
	out := c.Clone()
	var skipped, errs []string
	skip := func(format string, a ...any) { skipped = append(skipped, fmt.Sprintf(format, a...)) }
	idOf := map[string]string{} // llama-swap ID → Llamatray ID
	for _, sid := range slices.Sorted(maps.Keys(f.Models)) {
		sm := f.Models[sid]
		macros, err := swapMacros(&sm.Macros, global)
		if err != nil {
			errs = append(errs, fmt.Sprintf("models.%s.macros: %v", sid, err))
			continue
		}
		macros["MODEL_ID"] = sid
		args, err := swapCommand(sm.Cmd, macros)
		if err != nil {
			errs = append(errs, fmt.Sprintf("models.%s.cmd: %v", sid, err))
			continue
		}
		if prog := filepath.Base(args[0]); !strings.Contains(prog, "llama-server") {
			skip("model %s: its cmd runs %s, not llama-server", sid, prog)
			continue
		}
		m, file, notes, err := swapArgs(args[1:])
		if err != nil {
			errs = append(errs, fmt.Sprintf("models.%s.cmd: %v", sid, err))
			continue
		}
		for _, n := range notes {
			skip("model %s: %s", sid, n)
		}
		if file == "" {
			skip("model %s: its cmd names no GGUF file (-m); a Hub model (-hf) is pulled with `llamatray pull`", sid)
			continue
		}
		id := strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
		idOf[sid] = id
		if sid != id {
			m.Aliases = append(m.Aliases, sid)
		}
		for _, a := range sm.Aliases {
			var v struct{ ID string }
			if a.Kind == yaml.ScalarNode {
				v.ID = a.Value
			} else if err := a.Decode(&v); err != nil {
				errs = append(errs, fmt.Sprintf("models.%s.aliases: %v", sid, err))
			}
			m.Aliases = append(m.Aliases, v.ID)
		}
		if sm.TTL != nil && *sm.TTL >= 0 {
			d := Duration(time.Duration(*sm.TTL) * time.Second) // 0: never unloaded, as llama-swap's
			m.IdleUnload = &d
		}
		m.Hidden = sm.Unlisted
		if s, ok := sm.Filters["stripParams"].(string); ok {
			for _, p := range strings.Split(s, ",") {
				if p = strings.TrimSpace(p); p != "" {
					m.StripParams = append(m.StripParams, p)
				}
			}
		}
		if sp, ok := sm.Filters["setParams"].(map[string]any); ok {
			m.SetParams = sp
		}
		for _, k := range slices.Sorted(maps.Keys(sm.Rest)) {
			skip("model %s: %s is not carried over (Llamatray runs and reaches llama-server itself)", sid, k)
		}
		if !slices.Contains(out.ModelDirs, file) {
			out.ModelDirs = append(out.ModelDirs, file)
		}
		old, _ := out.Section(id)
		old.Args = nil // the cmd's arguments are all of them
		m = overlay(old, m)
		slices.Sort(m.Aliases)
		m.Aliases = slices.Compact(m.Aliases)
		out = out.WithSection(id, m)
	}
	for _, gname := range slices.Sorted(maps.Keys(f.Groups)) {
		g := f.Groups[gname]
		for _, sid := range g.Members {
			id, ok := idOf[sid]
			switch {
			case f.Models[sid].Cmd == "":
				errs = append(errs, fmt.Sprintf("groups.%s: no model %q", gname, sid))
			case ok && g.Persistent:
				m, _ := out.Section(id)
				m.Pinned = true
				out = out.WithSection(id, m)
			}
		}
		skip("group %s: not needed (memory decides which models run together)%s", gname, map[bool]string{true: "; its models are pinned, as persistent keeps them", false: ""}[g.Persistent])
	}
	for _, sid := range f.Hooks.OnStartup.Preload {
		if id, ok := idOf[sid]; ok {
			m, _ := out.Section(id)
			m.LoadOnStart = true
			out = out.WithSection(id, m)
		}
	}
	if f.GlobalTTL > 0 {
		out.IdleUnload = Duration(time.Duration(f.GlobalTTL) * time.Second)
	}
	if f.HealthCheckTimeout > 0 {
		out.LoadTimeout = Duration(time.Duration(f.HealthCheckTimeout) * time.Second)
	}
	for _, k := range f.APIKeys {
		if !slices.Contains(out.APIKeys, k) {
			out.APIKeys = append(out.APIKeys, k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(f.Rest)) {
		skip("%s: not carried over (llama-swap's own setting)", k)
	}
	if len(errs) > 0 {
		return c, nil, fmt.Errorf("%s: %s", name, strings.Join(errs, "; "))
	}
	if err := out.Validate(); err != nil {
		return c, nil, fmt.Errorf("%s: the result would not be a valid configuration: %w", name, err)
	}
	return out, skipped, nil
}

// swapMacros reads a macros mapping in order (a macro may use earlier ones), over base.
func swapMacros(n *yaml.Node, base map[string]string) (map[string]string, error) {
	out := map[string]string{}
	maps.Copy(out, base)
	if n.Kind == 0 {
		return out, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, errors.New("not a mapping of names to values")
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		v, err := expandMacros(strings.TrimSpace(n.Content[i+1].Value), out)
		if err != nil {
			return nil, err
		}
		out[n.Content[i].Value] = v
	}
	return out, nil
}

// expandMacros replaces ${name}; ${PORT} stays (the --port it goes with is dropped).
func expandMacros(s string, macros map[string]string) (string, error) {
	var err error
	for range 10 { // macros in macros, bounded
		done := true
		s = swapMacro.ReplaceAllStringFunc(s, func(m string) string {
			k := m[2 : len(m)-1]
			if k == "PORT" {
				return m
			}
			v, ok := macros[k]
			if !ok {
				err = fmt.Errorf("unknown macro %s", m)
				return m
			}
			done = false
			return v
		})
		if err != nil || done {
			break
		}
	}
	return s, err
}

// swapCommand splits a cmd into words as llama-swap does: comment lines and line continuations
// dropped, quotes kept together.
func swapCommand(cmd string, macros map[string]string) ([]string, error) {
	var lines []string
	for _, l := range strings.Split(strings.ReplaceAll(cmd, "\\\n", " "), "\n") {
		if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "#") {
			lines = append(lines, t)
		}
	}
	s, err := expandMacros(strings.Join(lines, " "), macros)
	if err != nil {
		return nil, err
	}
	var words []string
	var cur strings.Builder
	var quote rune
	inWord := false
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '"' || r == '\'':
			quote, inWord = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if inWord {
				words, inWord = append(words, cur.String()), false
				cur.Reset()
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, errors.New("a quote is not closed")
	}
	if inWord {
		words = append(words, cur.String())
	}
	if len(words) == 0 {
		return nil, errors.New("empty")
	}
	return words, nil
}

// swapNumeric are the arguments whose value is a number Llamatray keeps as a setting.
var swapNumeric = []string{"-c", "--ctx-size", "-ngl", "--gpu-layers", "--n-gpu-layers", "-np", "--parallel"}

// swapArgs turns llama-server's arguments into a model's settings and its file.
func swapArgs(args []string) (m Model, file string, notes []string, err error) {
	for i := 0; i < len(args); i++ {
		a, val := args[i], ""
		numeric := slices.Contains(swapNumeric, a)
		if k, v, ok := strings.Cut(a, "="); ok && strings.HasPrefix(a, "--") {
			a, val = k, v
			numeric = slices.Contains(swapNumeric, a)
		} else if i+1 < len(args) && (numeric || !strings.HasPrefix(args[i+1], "-")) {
			val = args[i+1]
		}
		took := val != "" && !strings.Contains(args[i], "=")
		num, numErr := strconv.Atoi(val)
		if numeric && numErr != nil && val != "all" {
			return m, "", nil, fmt.Errorf("%s %q: not a whole number", a, val)
		}
		switch a {
		case "-m", "--model":
			file = ExpandHome(val)
		case "--port", "--host", "-a", "--alias":
		case "-c", "--ctx-size":
			m.CtxSize = num
		case "-ngl", "--gpu-layers", "--n-gpu-layers":
			if val == "all" {
				num, numErr = -1, nil
			}
			if numErr == nil {
				m.GPULayers = ptr(num)
			}
		case "-fa", "--flash-attn":
			if val == "" || !slices.Contains([]string{"on", "off", "auto"}, val) {
				m.FlashAttn, took = "on", false
			} else {
				m.FlashAttn = val
			}
		case "-np", "--parallel":
			m.Parallel = num
		default:
			if owner, ok := reservedArgs[a]; ok {
				notes = append(notes, fmt.Sprintf("%s is not carried over (Llamatray's %s)", a, owner))
				break
			}
			m.Args = append(m.Args, args[i])
			if took {
				m.Args = append(m.Args, val)
			}
		}
		if took {
			i++
		}
	}
	return m, file, notes, nil
}
