package config

import (
	"strings"
	"testing"
)

// discover and advertise are on by default, written in the commented file with what they do, and
// read back off.
func TestDiscoverKeys(t *testing.T) {
	d := Default()
	if !d.Discover || !d.Advertise {
		t.Fatalf("defaults: discover %v advertise %v, want both on", d.Discover, d.Advertise)
	}
	text, err := d.render()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\ndiscover = true\n", "\nadvertise = true\n", "Only while listen is not loopback"} {
		if !strings.Contains(text, want) {
			t.Errorf("rendered file lacks %q", want)
		}
	}
	c, err := Parse("config.toml", []byte("discover = false\nadvertise = false\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Discover || c.Advertise {
		t.Errorf("parsed: discover %v advertise %v, want both off", c.Discover, c.Advertise)
	}
	c, err = Parse("config.toml", []byte("listen = \"0.0.0.0:8080\"\napi_keys = [\"k\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !c.Discover || !c.Advertise {
		t.Errorf("a file without them: discover %v advertise %v, want the defaults", c.Discover, c.Advertise)
	}
	back, err := Parse("config.toml", []byte(text))
	if err != nil || !back.Discover || !back.Advertise {
		t.Errorf("round trip: %v %v %v", back.Discover, back.Advertise, err)
	}
}
