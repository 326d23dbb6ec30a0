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
	im := swapImport{out: c.Clone(), idOf: map[string]string{}}
	for _, sid := range slices.Sorted(maps.Keys(f.Models)) {
		im.model(sid, f.Models[sid], global)
	}
	im.groups(&f)
	im.server(&f)
	if len(im.errs) > 0 {
		return c, nil, fmt.Errorf("%s: %s", name, strings.Join(im.errs, "; "))
	}
	if err := im.out.Validate(); err != nil {
		return c, nil, fmt.Errorf("%s: the result would not be a valid configuration: %w", name, err)
	}
	return im.out, im.skipped, nil
}

// swapImport is one import under way: the configuration it makes, what it leaves out and why,
// and what it cannot read.
type swapImport struct {
	out     Config
	skipped []string          // "what: why", of what is not carried over
	errs    []string          // what does not read; any of them means nothing is taken
	idOf    map[string]string // llama-swap ID → Llamatray ID, of the models taken
}

func (im *swapImport) skip(format string, a ...any) {
	im.skipped = append(im.skipped, fmt.Sprintf(format, a...))
}

func (im *swapImport) fail(format string, a ...any) {
	im.errs = append(im.errs, fmt.Sprintf(format, a...))
}

// model takes llama-swap's model sid: the settings of its cmd and its own, under the ID of the
// file it runs, with its file in model_dirs.
func (im *swapImport) model(sid string, sm swapModel, global map[string]string) {
	macros, err := swapMacros(&sm.Macros, global)
	if err != nil {
		im.fail("models.%s.macros: %v", sid, err)
		return
	}
	macros["MODEL_ID"] = sid
	args, err := swapCommand(sm.Cmd, macros)
	if err != nil {
		im.fail("models.%s.cmd: %v", sid, err)
		return
	}
	if prog := filepath.Base(args[0]); !strings.Contains(prog, "llama-server") {
		im.skip("model %s: its cmd runs %s, not llama-server", sid, prog)
		return
	}
	m, file, notes, err := swapArgs(args[1:])
	if err != nil {
		im.fail("models.%s.cmd: %v", sid, err)
		return
	}
	for _, n := range notes {
		im.skip("model %s: %s", sid, n)
	}
	if file == "" {
		im.skip("model %s: its cmd names no GGUF file (-m); a Hub model (-hf) is pulled with `llamatray pull`", sid)
		return
	}
	id := strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	im.idOf[sid] = id
	if sid != id {
		m.Aliases = append(m.Aliases, sid)
	}
	im.settings(sid, sm, &m)
	if !slices.Contains(im.out.ModelDirs, file) {
		im.out.ModelDirs = append(im.out.ModelDirs, file)
	}
	old, _ := im.out.Section(id)
	old.Args = nil // the cmd's arguments are all of them
	m = overlay(old, m)
	slices.Sort(m.Aliases)
	m.Aliases = slices.Compact(m.Aliases)
	im.out = im.out.WithSection(id, m)
}

// settings adds to m the settings of llama-swap's model sid outside its cmd: aliases, ttl,
// unlisted, and its filters.
func (im *swapImport) settings(sid string, sm swapModel, m *Model) {
	for _, a := range sm.Aliases {
		var v struct{ ID string }
		if a.Kind == yaml.ScalarNode {
			v.ID = a.Value
		} else if err := a.Decode(&v); err != nil {
			im.fail("models.%s.aliases: %v", sid, err)
		}
		m.Aliases = append(m.Aliases, v.ID)
	}
	if sm.TTL != nil && *sm.TTL >= 0 {
		d := Duration(time.Duration(*sm.TTL) * time.Second) // 0: never unloaded, as llama-swap's
		m.IdleUnload = &d
	}
	m.Hidden = sm.Unlisted
	if s, ok := sm.Filters["stripParams"].(string); ok {
		m.StripParams = append(m.StripParams, splitList(s)...)
	}
	if sp, ok := sm.Filters["setParams"].(map[string]any); ok {
		m.SetParams = sp
	}
	for _, k := range slices.Sorted(maps.Keys(sm.Rest)) {
		im.skip("model %s: %s is not carried over (Llamatray runs and reaches llama-server itself)", sid, k)
	}
}

// groups pins the models of a persistent group; groups themselves are not needed.
func (im *swapImport) groups(f *swapFile) {
	for _, gname := range slices.Sorted(maps.Keys(f.Groups)) {
		g := f.Groups[gname]
		for _, sid := range g.Members {
			id, ok := im.idOf[sid]
			switch {
			case f.Models[sid].Cmd == "":
				im.fail("groups.%s: no model %q", gname, sid)
			case ok && g.Persistent:
				im.update(id, func(m *Model) { m.Pinned = true })
			}
		}
		im.skip("group %s: not needed (memory decides which models run together)%s", gname, map[bool]string{true: "; its models are pinned, as persistent keeps them", false: ""}[g.Persistent])
	}
}

// server takes llama-swap's settings outside its models and groups: preloads, the global ttl,
// the health check timeout and the API keys.
func (im *swapImport) server(f *swapFile) {
	for _, sid := range f.Hooks.OnStartup.Preload {
		if id, ok := im.idOf[sid]; ok {
			im.update(id, func(m *Model) { m.LoadOnStart = true })
		}
	}
	if f.GlobalTTL > 0 {
		im.out.IdleUnload = Duration(time.Duration(f.GlobalTTL) * time.Second)
	}
	if f.HealthCheckTimeout > 0 {
		im.out.LoadTimeout = Duration(time.Duration(f.HealthCheckTimeout) * time.Second)
	}
	for _, k := range f.APIKeys {
		if !slices.Contains(im.out.APIKeys, k) {
			im.out.APIKeys = append(im.out.APIKeys, k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(f.Rest)) {
		im.skip("%s: not carried over (llama-swap's own setting)", k)
	}
}

// update changes the section of the model id.
func (im *swapImport) update(id string, change func(*Model)) {
	m, _ := im.out.Section(id)
	change(&m)
	im.out = im.out.WithSection(id, m)
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
