package config

import (
	"errors"
	"strings"
	"testing"
)

func TestPeerChecks(t *testing.T) {
	for _, c := range []struct {
		name, url, key string
		bad            string // part of the key path of the error, "" when valid
	}{
		{"desk", "http://192.168.1.20:8080", "", ""},
		{"a.b-c_9", "https://box.lan/llm/", "sk-1", ""},
		{"", "http://x", "", "peers."},
		{"-x", "http://x", "", "peers.-x"},
		{"a/b", "http://x", "", "peers.a/b"},
		{"../etc", "http://x", "", "peers.../etc"},
		{strings.Repeat("n", 65), "http://x", "", "peers." + strings.Repeat("n", 65)},
		{"x", "ftp://x", "", "peers.x.url"},
		{"x", "x:8080", "", "peers.x.url"},
		{"x", "http://", "", "peers.x.url"},
		{"x", "http://u:p@x", "", "peers.x.url"},
		{"x", "http://x/?a=1", "", "peers.x.url"},
		{"x", "http://x", "a\nb", "peers.x.api_key"},
		{"x", "http://x", " k", "peers.x.api_key"},
	} {
		cfg := Default()
		cfg.Peers = map[string]Peer{c.name: {URL: c.url, APIKey: c.key}}
		err := cfg.Validate()
		if c.bad == "" {
			if err != nil {
				t.Errorf("%q %q: %v", c.name, c.url, err)
			}
			continue
		}
		var fe *FieldError
		if !errors.As(err, &fe) || strings.Join(fe.Key, ".") != c.bad {
			t.Errorf("%q %q %q: got %v, want an error at %s", c.name, c.url, c.key, err, c.bad)
		}
	}
	cfg := Default()
	cfg.Peers = map[string]Peer{"Desk": {URL: "http://a"}, "desk": {URL: "http://b"}}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "only in case") {
		t.Errorf("names differing in case: %v", err)
	}
}

// The peers survive a save and a load, and the file without peers documents them.
func TestPeersRoundTrip(t *testing.T) {
	if !strings.Contains(DefaultFileText(), "# [peers.desktop]") {
		t.Fatal("the default file does not document [peers.NAME]")
	}
	cfg := Default()
	cfg.Peers = map[string]Peer{"desk": {URL: "http://192.168.1.20:8080", APIKey: `k"ey`}, "nas": {URL: "http://nas:11434"}}
	text, err := cfg.render()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse("config.toml", []byte(text))
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	if len(back.Peers) != 2 || back.Peers["desk"] != cfg.Peers["desk"] || back.Peers["nas"] != cfg.Peers["nas"] {
		t.Fatalf("%+v", back.Peers)
	}
	c := cfg.Clone()
	c.Peers["x"] = Peer{URL: "http://x"}
	if _, ok := cfg.Peers["x"]; ok {
		t.Fatal("Clone shares the peers")
	}
}
