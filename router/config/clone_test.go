package config

import (
	"reflect"
	"testing"
)

// A clone is equal to the original, and changing anything in it, down to a variant's pointer
// field, leaves the original as it was.
func TestCloneSharesNothing(t *testing.T) {
	build := func() Config {
		n, d := 3, Duration(5)
		c := Default()
		c.ModelDirs = []string{"/a"}
		c.APIKeys = []string{"k"}
		c.DeviceMemoryLimit = map[string]Size{"CUDA0": GiB}
		c.Defaults.GPULayers = &n
		c.Models = map[string]Model{"m": {Aliases: []string{"x"}, GPULayers: &n, IdleSleep: &d,
			Variants: map[string]Model{"v": {Args: []string{"--a"}, IdleUnload: &d}}}}
		return c
	}
	orig, want := build(), build()
	c := orig.Clone()
	if !reflect.DeepEqual(c, orig) {
		t.Fatalf("clone %+v, want %+v", c, orig)
	}
	c.ModelDirs[0] = "/b"
	c.APIKeys[0] = "j"
	c.DeviceMemoryLimit["CUDA0"] = 0
	*c.Defaults.GPULayers = 9
	m := c.Models["m"]
	m.Aliases[0] = "y"
	*m.GPULayers = 9
	*m.IdleSleep = 9
	v := m.Variants["v"]
	v.Args[0] = "--b"
	*v.IdleUnload = 9
	m.Variants["w"] = Model{}
	c.Models["n"] = Model{}
	if !reflect.DeepEqual(orig, want) {
		t.Fatalf("changing the clone changed the original: %+v", orig)
	}
}
