package peer

import (
	"testing"
)

// TestPeerNamesFollowTheRule: a peer's model IDs with a bidi override or control characters are
// not listed (a U+202E could pass a peer's model off as a local one), and a state holding an
// escape sequence is dropped, for `peer list`'s terminal and the window.
func TestPeerNamesFollowTheRule(t *testing.T) {
	raw := []byte(`{"data":[
		{"id":"good","status":{"value":"loaded"}},
		{"id":"fuuf.\u202egguf","status":{"value":"loaded"}},
		{"id":"ansi\u001b[2J"},
		{"id":"zw\u200bsp"},
		{"id":"evil-state","status":{"value":"loaded\n\u001b[2J"}}]}`)
	ms, err := parseOpenAI(raw)
	if err != nil {
		t.Fatal(err)
	}
	want := []Model{{ID: "good", Status: "loaded"}, {ID: "evil-state", Status: ""}}
	if len(ms) != len(want) || ms[0] != want[0] || ms[1] != want[1] {
		t.Fatalf("parseOpenAI = %+v, want %+v", ms, want)
	}
	tags, err := parseOllama([]byte(`{"models":[{"name":"ok:latest"},{"name":"x\u202eest"}]}`))
	if err != nil || len(tags) != 1 || tags[0].ID != "ok:latest" {
		t.Fatalf("parseOllama = %+v, %v", tags, err)
	}
}
