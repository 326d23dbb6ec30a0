package config

import (
	"reflect"
	"slices"
)

// Merge3 is a model's section as a form edited it (mine, from was, the section the form showed
// when it opened or last saved) laid over now, the section in force: a setting mine left as was
// had it takes now's value, so that what changed elsewhere since (a pin through the API, an alias
// given by /api/copy) is kept; a setting the form changed is the form's. Empty and absent lists are
// the same setting.
func Merge3(mine, was, now Model) Model {
	out := now
	m, w, o := reflect.ValueOf(mine), reflect.ValueOf(was), reflect.ValueOf(&out).Elem()
	for i := range m.NumField() {
		if !sameSetting(m.Field(i), w.Field(i)) {
			o.Field(i).Set(m.Field(i))
		}
	}
	return out
}

// sameSetting compares two values of one Model field, an empty list or map as an absent one.
func sameSetting(a, b reflect.Value) bool {
	switch a.Kind() {
	case reflect.Slice, reflect.Map:
		if a.Len() == 0 && b.Len() == 0 {
			return true
		}
	}
	return reflect.DeepEqual(a.Interface(), b.Interface())
}

// variantFields are the settings a variant's section gives only where they differ from its model's.
var variantFields = []string{"Draft", "DraftGPULayers", "DraftMax", "CtxSize", "GPULayers", "FlashAttn",
	"Parallel", "CacheType", "IdleSleep", "IdleUnload"}

// VariantOver is the section of a variant of a model whose own section is own, for the variant
// to run as sec says: only what differs from own, so that the rest follows the model. Its args are
// added after the model's; aliases the model has stay the model's.
func VariantOver(own, sec Model) Model {
	v := Model{Pinned: sec.Pinned, LoadOnStart: sec.LoadOnStart}
	o, s, d := reflect.ValueOf(own), reflect.ValueOf(sec), reflect.ValueOf(&v).Elem()
	for _, f := range variantFields {
		if !reflect.DeepEqual(s.FieldByName(f).Interface(), o.FieldByName(f).Interface()) {
			d.FieldByName(f).Set(s.FieldByName(f))
		}
	}
	switch {
	case slices.Equal(sec.Args, own.Args):
	case len(sec.Args) > len(own.Args) && slices.Equal(sec.Args[:len(own.Args)], own.Args):
		v.Args = slices.Clone(sec.Args[len(own.Args):])
	default:
		v.Args = slices.Clone(sec.Args)
	}
	for _, a := range sec.Aliases {
		if !slices.Contains(own.Aliases, a) {
			v.Aliases = append(v.Aliases, a)
		}
	}
	return v
}
