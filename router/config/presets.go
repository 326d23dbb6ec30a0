package config

// llama.cpp's router presets (llama-server --models-preset FILE), read in place: an INI file with a
// section per model, [*] for every model, and llama-server's long argument names as keys
// ("ctx-size = 8192", "alias = a,b", "tags = chat", "model = /path/x.gguf", "load-on-startup = true").
// The configuration's `presets` key names the file; Llamatray never writes it. A section with
// `model` serves that file (its ID is the file's name, the section's name an alias); one without
// gives the settings of the model of that ID found in the model folders.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Presets are a preset file's sections as model settings.
type Presets struct {
	Path   string
	All    Model            // [*]
	Models map[string]Model // by model ID
	Files  []string         // the GGUF files of the sections with `model`, for the catalog
	// Ignored are the keys that llama.cpp's router reads and Llamatray has its own setting for
	// (stop-timeout: the global stop_timeout), as "FILE:LINE: key", to say so in the log.
	Ignored []string
	line    map[string]int // section → line, for errors
	mtime   time.Time      // the file's, when read (PresetChanged)
	size    int64
}

// presetOwned are llama-server arguments a preset may not set: Llamatray sets them itself.
var presetOwned = map[string]string{"host": "listen", "port": "listen", "api-key": "api_keys",
	"models-dir": "model_dirs", "models-preset": "presets", "models-max": "max_loaded",
	"models-autoload": "models_autoload", "no-models-autoload": "models_autoload", "hf-repo": "the catalog",
	"sleep-idle-seconds": "idle_sleep"}

// ReadPresets reads the preset file at path. known says whether llama-server takes an argument
// ("--jinja"); nil takes every one. A key llama-server does not take, a value Llamatray cannot use
// or a syntax error is an *Error naming the line; nothing of the file is used then.
func ReadPresets(path string, known func(flag string) bool) (*Presets, error) {
	st, err := os.Stat(ExpandHome(path))
	if err != nil {
		return nil, fmt.Errorf("presets: %w", err)
	}
	data, err := readLimited(ExpandHome(path))
	if err != nil {
		return nil, fmt.Errorf("presets: read %s: %w", path, err)
	}
	p, err := ParsePresets(path, data, known)
	if err != nil {
		return nil, err
	}
	p.mtime, p.size = st.ModTime(), st.Size()
	return p, nil
}

// ParsePresets reads preset text; name is used in errors and to resolve relative model paths.
func ParsePresets(name string, data []byte, known func(flag string) bool) (*Presets, error) {
	r := &presetReader{name: name, known: known, p: &Presets{Path: name, Models: map[string]Model{}, line: map[string]int{}}}
	sc := bufio.NewScanner(bytes.NewReader(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))))
	sc.Buffer(make([]byte, 64<<10), maxFileSize)
	for n := 1; sc.Scan(); n++ {
		switch l := strings.TrimSpace(sc.Text()); {
		case l == "" || l[0] == ';' || l[0] == '#':
		case l[0] == '[':
			r.header(n, l)
		default:
			r.setting(n, l)
		}
	}
	r.flush()
	if err := sc.Err(); err != nil {
		r.fail(0, "", err.Error())
	}
	if len(r.errs) == 0 {
		r.validate()
	}
	if len(r.errs) > 0 {
		return nil, errors.Join(r.errs...)
	}
	return r.p, nil
}

// presetReader is one preset file being read, line by line.
type presetReader struct {
	name    string // the file's, for errors and relative model paths
	known   func(flag string) bool
	p       *Presets
	errs    []error
	section string // the section being read, "" before the first
	id      string // the ID of its model: the section's name, or its model file's
	cur     *Model // its settings; nil before the first section
}

func (r *presetReader) fail(line int, key, reason string) {
	r.errs = append(r.errs, &Error{File: r.name, Line: line, Key: key, Reason: reason})
}

// flush keeps the section read so far.
func (r *presetReader) flush() {
	if r.cur == nil {
		return
	}
	if r.section == "*" {
		r.p.All = *r.cur
	} else {
		r.p.Models[r.id] = *r.cur
	}
}

// header starts the section of line n, l: "[name]".
func (r *presetReader) header(n int, l string) {
	if !strings.HasSuffix(l, "]") || strings.TrimSpace(l[1:len(l)-1]) == "" {
		r.fail(n, "", fmt.Sprintf("%q is not a section header like [model-name]", l))
		return
	}
	r.flush()
	r.section = strings.TrimSpace(l[1 : len(l)-1])
	if _, dup := r.p.line[r.section]; dup {
		r.fail(n, "", fmt.Sprintf("section [%s] is given twice", r.section))
	}
	r.p.line[r.section], r.id, r.cur = n, r.section, &Model{}
}

// setting reads line n, l: "key = value" of the section being read.
func (r *presetReader) setting(n int, l string) {
	k, v, ok := strings.Cut(l, "=")
	k, v = strings.TrimPrefix(strings.TrimSpace(k), "--"), strings.Trim(strings.TrimSpace(v), `"`)
	switch {
	case !ok || k == "":
		r.fail(n, "", fmt.Sprintf("%q is not a key = value line", l))
		return
	case r.cur == nil:
		r.fail(n, k, "a key before the first [section]")
		return
	}
	if k == "model" && r.section != "*" {
		path := ExpandHome(v)
		// Relative to the preset file; a rooted path (/models/x.gguf, as llama.cpp's presets
		// give them) stays as it is, on Windows on the current drive.
		if !filepath.IsAbs(path) && !strings.HasPrefix(filepath.ToSlash(path), "/") {
			path = filepath.Join(filepath.Dir(r.name), path)
		}
		r.p.Files = append(r.p.Files, filepath.Clean(path))
		if fid := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)); fid != r.section {
			r.cur.Aliases = append(r.cur.Aliases, r.section)
			r.id = fid
		}
		return
	}
	if err := r.cur.setPreset(k, v, r.known); err != nil {
		r.fail(n, k, err.Error())
	}
	if k == "stop-timeout" {
		r.p.Ignored = append(r.p.Ignored, fmt.Sprintf("%s:%d: %s", r.name, n, k))
	}
}

// validate checks the settings read as the configuration checks its own, each problem at the line
// of its section.
func (r *presetReader) validate() {
	check := Default()
	check.Models = r.p.Models
	check.Defaults.Args = r.p.All.Args
	for _, e := range flatten(check.Validate()) {
		var fe *FieldError
		if errors.As(e, &fe) && len(fe.Key) >= 2 {
			r.fail(r.p.line[fe.Key[1]], fe.Key[len(fe.Key)-1], fe.Reason)
		} else if e != nil {
			r.fail(0, "", e.Error())
		}
	}
}

// setPreset applies one key of a preset section: a setting Llamatray has, else an argument.
func (m *Model) setPreset(k, v string, known func(string) bool) error {
	num := func() (int, error) {
		n, err := strconv.Atoi(v)
		if err != nil {
			return 0, fmt.Errorf("%q is not a whole number", v)
		}
		return n, nil
	}
	var err error
	switch k {
	case "alias", "a":
		m.Aliases = append(m.Aliases, splitList(v)...)
	case "tags":
		m.Tags = append(m.Tags, splitList(v)...)
	case "ctx-size", "c":
		m.CtxSize, err = num()
	case "n-gpu-layers", "gpu-layers", "ngl":
		switch v {
		case "all":
			m.GPULayers = ptr(-1)
		case "auto":
			m.GPULayers = nil
		default:
			var n int
			if n, err = num(); err == nil {
				m.GPULayers = ptr(n)
			}
		}
	case "flash-attn", "fa":
		m.FlashAttn = v
	case "parallel", "np":
		m.Parallel, err = num()
	case "load-on-startup":
		m.LoadOnStart, err = strconv.ParseBool(v)
	case "stop-timeout": // the global stop_timeout applies
		_, err = num()
	default:
		var args []string
		if args, err = presetArgs(k, v, known); err == nil {
			m.Args = append(m.Args, args...)
		}
	}
	return err
}

// presetArgs are the llama-server arguments of a preset key Llamatray has no setting for: a
// boolean as its flag or its --no- flag, anything else as the flag and its value.
func presetArgs(k, v string, known func(string) bool) ([]string, error) {
	if owner, ok := presetOwned[k]; ok {
		return nil, fmt.Errorf("set by Llamatray (from %s); remove it", owner)
	}
	if known != nil && !known("--"+k) {
		return nil, errors.New("not an argument llama-server takes")
	}
	switch strings.ToLower(v) {
	case "true", "on", "enabled":
		return []string{"--" + k}, nil
	case "false", "off", "disabled":
		if known != nil && !known("--no-"+k) {
			return nil, fmt.Errorf("llama-server has no --no-%s to turn it off", k)
		}
		return []string{"--no-" + k}, nil
	}
	return []string{"--" + k, v}, nil
}

// splitList is the items of a comma-separated list, spaces trimmed, empty ones left out.
func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// overlay layers section m over section p (a preset's under the configuration's own, the section
// in the file under an import's): m's settings over p's (layered), aliases and tags are both's, a
// flag either sets is set.
func overlay(p, m Model) Model {
	out := layered(p, m)
	out.Aliases = slices.Compact(append(slices.Clone(p.Aliases), m.Aliases...))
	out.Tags = append(slices.Clone(p.Tags), m.Tags...)
	out.LoadOnStart, out.Hidden, out.Pinned = out.LoadOnStart || p.LoadOnStart, out.Hidden || p.Hidden, out.Pinned || p.Pinned
	return out
}

// ReadPresetsOf is c with the preset file it names read, every key llama-server might take
// accepted (the service checks them against its llama-server's flags once it found one).
func ReadPresetsOf(c Config) (Config, error) {
	if c.Presets == "" || c.presets != nil {
		return c, nil
	}
	p, err := ReadPresets(c.Presets, nil)
	if err != nil {
		return c, err
	}
	return c.WithPresets(p), nil
}

// WithPresets returns c reading its models' settings from p too (nil: none). The file is not
// part of what Save writes.
func (c Config) WithPresets(p *Presets) Config {
	c.presets = p
	return c
}

// LoadedPresets are the presets c reads, nil when none.
func (c Config) LoadedPresets() *Presets { return c.presets }

// PresetChanged says whether the preset file c names was changed since it was read: its size or
// time differs (or it came or went).
func (c Config) PresetChanged() bool {
	if c.Presets == "" {
		return c.presets != nil
	}
	st, err := os.Stat(ExpandHome(c.Presets))
	if c.presets == nil {
		return err == nil
	}
	return err != nil || st.ModTime() != c.presets.mtime || st.Size() != c.presets.size
}
