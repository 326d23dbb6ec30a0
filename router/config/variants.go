package config

// Variants of one file: [models."ID".variants."NAME"] makes the model ID "ID@NAME", served from the
// same GGUF as ID with its own settings. A variant's ctx_size, gpu_layers, flash_attn, parallel,
// cache_type and idle timers, when set, replace its model's; its args follow its model's. Aliases,
// tags, pinned, load_on_start and hidden belong to an ID: a variant has its own, never its model's.

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// VariantSep joins a model ID and a variant name into the variant's ID: "qwen-7b@32k".
const VariantSep = "@"

// maxVariantName bounds a variant name's length.
const maxVariantName = 64

// VariantID is the model ID of variant name of model base.
func VariantID(base, name string) string { return base + VariantSep + name }

// Variant says whether id names a variant this configuration declares, and of which model.
func (c Config) Variant(id string) (base, name string, ok bool) {
	i := strings.LastIndex(id, VariantSep)
	if i <= 0 || i == len(id)-1 {
		return "", "", false
	}
	base, name = id[:i], id[i+1:]
	if _, ok := c.Models[base].Variants[name]; !ok {
		return "", "", false
	}
	return base, name, true
}

// VariantNames lists the variants of model base, sorted.
func (c Config) VariantNames(base string) []string {
	v := c.Models[base].Variants
	if len(v) == 0 {
		return nil
	}
	return slices.Sorted(maps.Keys(v))
}

// Section is id's own section: [models."ID"] (without its variants) or, for a variant,
// [models."ID".variants."NAME"]. ok is false when the file has none.
func (c Config) Section(id string) (m Model, ok bool) {
	if base, name, isVar := c.Variant(id); isVar {
		return c.Models[base].Variants[name], true
	}
	m, ok = c.Models[id]
	m.Variants = nil
	return m, ok
}

// SectionKey is the key path of id's section, as FieldError.Key starts: ["models", ID] or
// ["models", ID, "variants", NAME].
func (c Config) SectionKey(id string) []string {
	if base, name, ok := c.Variant(id); ok {
		return []string{"models", base, "variants", name}
	}
	return []string{"models", id}
}

// WithSection returns c with id's own section replaced by m (a model keeps its variants; m's are
// ignored). The maps it changes are copies: c is left as it was.
func (c Config) WithSection(id string, m Model) Config {
	if base, name, ok := c.Variant(id); ok {
		return c.withVariant(base, name, m)
	}
	out := c
	out.Models = maps.Clone(c.Models)
	if out.Models == nil {
		out.Models = map[string]Model{}
	}
	m.Variants = c.Models[id].Variants
	out.Models[id] = m
	return out
}

// WithVariant returns c with a new variant name of model base, whose section is m (c is left as
// it was). It fails when the name is not a valid variant name or is taken.
func (c Config) WithVariant(base, name string, m Model) (Config, error) {
	if err := checkVariantName(name); err != nil {
		return c, err
	}
	if _, _, ok := c.Variant(base); ok {
		return c, fmt.Errorf("%s is itself a variant; make the new one a variant of its model", base)
	}
	if _, ok := c.Models[base].Variants[name]; ok {
		return c, fmt.Errorf("%s already has a variant %q", base, name)
	}
	return c.withVariant(base, name, m), nil
}

// withVariant is c with the section of variant name of model base set to m; c is left as it was.
func (c Config) withVariant(base, name string, m Model) Config {
	m.Variants = nil
	out := c
	out.Models = maps.Clone(c.Models)
	if out.Models == nil {
		out.Models = map[string]Model{}
	}
	b := out.Models[base]
	b.Variants = maps.Clone(b.Variants)
	if b.Variants == nil {
		b.Variants = map[string]Model{}
	}
	b.Variants[name] = m
	out.Models[base] = b
	return out
}

// Layered is id's section as it applies: for a model, [models."ID"] without its variants; for a
// variant, its section layered over its model's. ok is false when neither is in the file.
func (c Config) Layered(id string) (Model, bool) {
	base, name, ok := c.Variant(id)
	if !ok {
		return c.Section(id)
	}
	out := layered(c.Models[base], c.Models[base].Variants[name])
	out.Variants = nil
	return out, true
}

// layered is over's settings layered over under's (a variant's over its model's, a preset's
// section under the configuration's own): what over sets wins, its args follow under's, request
// parameters are merged; its names (aliases, tags), flags and variants stay its own.
func layered(under, over Model) Model {
	out := over
	out.Args = append(slices.Clone(under.Args), over.Args...)
	out.CtxSize = cmp.Or(out.CtxSize, under.CtxSize)
	out.GPULayers = cmp.Or(out.GPULayers, under.GPULayers)
	out.FlashAttn = cmp.Or(out.FlashAttn, under.FlashAttn)
	out.Parallel = cmp.Or(out.Parallel, under.Parallel)
	out.CacheType = cmp.Or(out.CacheType, under.CacheType)
	out.IdleSleep = cmp.Or(out.IdleSleep, under.IdleSleep)
	out.Draft = cmp.Or(out.Draft, under.Draft)
	out.DraftGPULayers = cmp.Or(out.DraftGPULayers, under.DraftGPULayers)
	out.DraftMax = cmp.Or(out.DraftMax, under.DraftMax)
	if out.Workers == nil {
		out.Workers = slices.Clone(under.Workers)
	}
	out.SetParams = mergeParams(under.SetParams, over.SetParams)
	out.DefaultParams = mergeParams(under.DefaultParams, over.DefaultParams)
	out.StripParams = unionStrings(under.StripParams, over.StripParams)
	out.IdleUnload = cmp.Or(out.IdleUnload, under.IdleUnload)
	return out
}

// checkVariantName refuses a name that cannot be part of a model ID and of a URL path.
func checkVariantName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("a variant name must not be empty")
	case len(name) > maxVariantName:
		return fmt.Errorf("variant name %q is longer than %d characters", name, maxVariantName)
	case name[0] == '.' || name[0] == '-':
		return fmt.Errorf("variant name %q must start with a letter, a digit or '_'", name)
	}
	if i := strings.IndexFunc(name, notNameRune); i >= 0 {
		return fmt.Errorf("variant name %q may hold only letters, digits, '.', '-' and '_' (it becomes part of the model ID and of URLs), not %q", name, []rune(name[i:])[0])
	}
	return nil
}
