package config

import (
	"reflect"
	"testing"
	"time"
)

// A form's section laid over the section in force: what the form changed is the form's, what it
// left as it showed it follows what changed elsewhere meanwhile; an empty list is no change.
func TestMerge3(t *testing.T) {
	ten, eight := 10, 8
	hour := Duration(time.Hour)
	was := Model{CtxSize: 4096, Args: nil, Aliases: []string{"a"}}
	now := Model{CtxSize: 4096, Pinned: true, Aliases: []string{"a", "b"}, Draft: "small", GPULayers: &eight} // pinned, aliased, drafted elsewhere
	mine := Model{CtxSize: 8192, Args: []string{}, Aliases: []string{"a"}, GPULayers: nil, IdleSleep: &hour}
	want := Model{CtxSize: 8192, Pinned: true, Aliases: []string{"a", "b"}, Draft: "small", GPULayers: &eight, IdleSleep: &hour}
	if got := Merge3(mine, was, now); !reflect.DeepEqual(got, want) {
		t.Fatalf("Merge3:\n%+v\nwant\n%+v", got, want)
	}
	mine.GPULayers = &ten // changed by the form too: the form's
	if got := Merge3(mine, was, now); got.GPULayers == nil || *got.GPULayers != 10 {
		t.Fatalf("gpu_layers changed in the form: %v", got.GPULayers)
	}
}

// A variant's section holds only what differs from its model's: its extra args after the model's,
// its own aliases, a draft setting of its own.
func TestVariantOver(t *testing.T) {
	own := Model{CtxSize: 4096, Args: []string{"--jinja"}, Aliases: []string{"q"}, Draft: "small", DraftMax: 8}
	sec := Model{CtxSize: 16384, Args: []string{"--jinja", "--top-k", "20"}, Aliases: []string{"q", "q-long"}, Draft: "small", DraftMax: 16, Pinned: true}
	want := Model{CtxSize: 16384, Args: []string{"--top-k", "20"}, Aliases: []string{"q-long"}, DraftMax: 16, Pinned: true}
	if got := VariantOver(own, sec); !reflect.DeepEqual(got, want) {
		t.Fatalf("VariantOver:\n%+v\nwant\n%+v", got, want)
	}
}
