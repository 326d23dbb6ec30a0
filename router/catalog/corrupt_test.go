package catalog

import (
	"bytes"
	"context"
	"encoding/binary"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llamatray/llamatray/router/testbed/ggufwrite"
)

// corruptCase is a damaged model file: its bytes, the size to extend it to (sparse; 0 = as is),
// and what the warning must say.
type corruptCase struct {
	name   string
	data   []byte
	extend int64
	reason string
}

// fixtureBytes returns the bytes of a header-only fixture written with o.
func fixtureBytes(t testing.TB, o ggufwrite.HeaderOptions) []byte {
	t.Helper()
	p := filepath.Join(t.TempDir(), "f.gguf")
	writeModel(t, p, o)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// patchU64 returns a copy of b with the little-endian uint64 at off set to v.
func patchU64(b []byte, off int, v uint64) []byte {
	out := bytes.Clone(b)
	binary.LittleEndian.PutUint64(out[off:], v)
	return out
}

// afterKey returns the offset just past the key's bytes in a header.
func afterKey(t testing.TB, b []byte, key string) int {
	t.Helper()
	i := bytes.Index(b, []byte(key))
	if i < 0 {
		t.Fatalf("key %q not in fixture", key)
	}
	return i + len(key)
}

// corruptCases builds the damaged files the catalog must skip with a warning.
func corruptCases(t testing.TB) []corruptCase {
	good := fixtureBytes(t, ggufwrite.HeaderOptions{})
	perLayer := fixtureBytes(t, ggufwrite.HeaderOptions{ExtraKVs: []ggufwrite.KV{{Key: "llama.feed_forward_length", Value: []int32{128, 128}}}})
	rnd := make([]byte, 4096)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range rnd {
		rnd[i] = byte(r.UintN(256))
	}
	badMagic := bytes.Clone(good)
	copy(badMagic, "GGUX")
	oldGGML := bytes.Clone(good)
	copy(oldGGML, "tjgg")
	badVersion := bytes.Clone(good)
	binary.LittleEndian.PutUint32(badVersion[4:], 99)
	tokens := afterKey(t, good, "tokenizer.ggml.tokens") + 4 + 4 // value type, item type
	ffn := afterKey(t, perLayer, "llama.feed_forward_length") + 4 + 4
	badType := bytes.Clone(good)
	binary.LittleEndian.PutUint32(badType[afterKey(t, good, "general.name"):], 77)
	zeroAlign := bytes.Clone(good)
	binary.LittleEndian.PutUint32(zeroAlign[afterKey(t, good, "general.alignment")+4:], 0)
	return []corruptCase{
		{"random bytes", rnd, 0, "not a GGUF file"},
		{"zero bytes", nil, 0, "empty file"},
		{"short file", []byte("GGUF\x03\x00"), 0, "too short"},
		{"truncated header", good[:200], 0, "truncated"},
		{"truncated data", good[:len(good)-1000], 0, "tensor data needs"},
		{"bad magic", badMagic, 0, "not a GGUF file"},
		{"old ggml", oldGGML, 0, "old GGML format"},
		{"bad version", badVersion, 0, "unsupported GGUF version 99"},
		{"huge key length", patchU64(good, 24, 1<<40), 0, "absurd string length"},
		{"huge string length", patchU64(good, afterKey(t, good, "general.name")+4, 1<<36), 1 << 40, "absurd string length"},
		{"huge array length", patchU64(good, tokens, 1<<38), 1 << 40, "absurd array length"},
		{"huge per-layer array", patchU64(perLayer, ffn, 1<<20), 1 << 40, "absurd per-layer array length"},
		{"huge tensor count", patchU64(good, 8, 1<<40), 0, "absurd tensor count"},
		{"huge metadata count", patchU64(good, 16, 1<<40), 0, "absurd metadata count"},
		{"absurd block count", fixtureBytes(t, ggufwrite.HeaderOptions{ExtraKVs: []ggufwrite.KV{{Key: "llama.block_count", Value: uint32(1 << 30)}}}), 0, "absurd block count"},
		{"absurd split tensors", fixtureBytes(t, ggufwrite.HeaderOptions{ExtraKVs: []ggufwrite.KV{{Key: "split.tensors.count", Value: int64(1 << 40)}}}), 0, "absurd split tensor count"},
		{"zero alignment", zeroAlign, 0, "invalid alignment"},
		{"numeric architecture", fixtureBytes(t, ggufwrite.HeaderOptions{ExtraKVs: []ggufwrite.KV{{Key: "general.architecture", Value: uint32(7)}}}), 0, "must hold a string"},
		{"bad value type", badType, 0, "invalid value type 77"},
	}
}

func TestCorruptFilesAreSkipped(t *testing.T) {
	root := t.TempDir()
	writeModel(t, filepath.Join(root, "good.gguf"), ggufwrite.HeaderOptions{})
	cases := corruptCases(t)
	paths := map[string]string{}
	for i, cc := range cases {
		p := filepath.Join(root, "bad", strings.ReplaceAll(cc.name, " ", "-")+".gguf")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, cc.data, 0o644); err != nil {
			t.Fatal(err)
		}
		if cc.extend > 0 {
			if err := os.Truncate(p, cc.extend); err != nil {
				t.Fatal(err)
			}
		}
		paths[cases[i].name] = p
	}

	c, lb := newCatalog(t, Options{Dirs: []string{root}})
	if got := ids(c.Models()); len(got) != 1 || got[0] != "good" {
		t.Errorf("IDs = %v, want only good", got)
	}
	warnings := c.Warnings()
	if len(warnings) != len(cases) {
		t.Errorf("%d warnings for %d bad files:\n%s", len(warnings), len(cases), strings.Join(warnings, "\n"))
	}
	for _, cc := range cases {
		p := paths[cc.name]
		var w string
		for _, x := range warnings {
			if strings.HasPrefix(x, p+": ") {
				w = x
			}
		}
		if !strings.Contains(w, cc.reason) {
			t.Errorf("%s: warning %q, want it to contain %q", cc.name, w, cc.reason)
		}
		if n := lb.count("file=" + p + " "); n != 1 {
			t.Errorf("%s: logged %d times, want once", cc.name, n)
		}
		if strings.Contains(w, "unreadable header") {
			t.Errorf("%s: the parser panicked instead of the check refusing it: %s", cc.name, w)
		}
	}

	// Unchanged bad files are not read or logged again, but still reported.
	if err := c.Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := len(c.Warnings()); got != len(cases) {
		t.Errorf("second scan: %d warnings", got)
	}
	for _, cc := range cases {
		if n := lb.count("file=" + paths[cc.name] + " "); n != 1 {
			t.Errorf("%s: logged %d times after a second scan, want once", cc.name, n)
		}
	}
}
