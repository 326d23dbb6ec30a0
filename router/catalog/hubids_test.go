package catalog

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/llamatray/llamatray/router/testbed/ggufwrite"
)

// A model pulled as ORG/REPO:QUANT has that name as its ID; its file-name ID stays an alias (and
// its variants' old IDs too); Renamed is told of it; a file outside the cache keeps its name.
func TestHubNameIsTheID(t *testing.T) {
	hub := t.TempDir()
	writeModel(t, filepath.Join(hub, "models--Org--Tiny-GGUF", "blobs", "aaa"), ggufwrite.HeaderOptions{})
	writeHFRepo(t, hub, "Org", "Tiny-GGUF", "r", map[string]map[string]string{"r": {"tiny-llama-Q8_0.gguf": "aaa"}})
	plain := t.TempDir()
	writeModel(t, filepath.Join(plain, "local-Q4_K_M.gguf"), ggufwrite.HeaderOptions{})
	var mu sync.Mutex
	var told map[string]string
	var asked []string
	c, _ := newCatalog(t, Options{
		Dirs:     []string{hub, plain},
		Variants: func() map[string][]string { return map[string][]string{"Org/Tiny-GGUF:Q8_0": {"long"}} },
		Aliases: func(id string) []string {
			mu.Lock()
			asked = append(asked, id)
			mu.Unlock()
			if id == "Org/Tiny-GGUF:Q8_0" {
				return []string{"tiny"}
			}
			return nil
		},
		Renamed: func(r map[string]string) { mu.Lock(); told = r; mu.Unlock() },
	})
	if got, want := ids(c.Models()), []string{"Org/Tiny-GGUF:Q8_0", "Org/Tiny-GGUF:Q8_0@long", "local-Q4_K_M"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("IDs = %v, want %v", got, want)
	}
	if want := map[string]string{"Org/Tiny-GGUF:Q8_0": "tiny-llama-Q8_0"}; !reflect.DeepEqual(told, want) {
		t.Errorf("Renamed told %v, want %v", told, want)
	}
	if slices.Contains(asked, "tiny-llama-Q8_0") {
		t.Errorf("settings were asked under the file-name ID: %v", asked)
	}
	for _, name := range []string{"Org/Tiny-GGUF:Q8_0", "org/tiny-gguf:q8_0", "tiny-llama-Q8_0", "TINY-LLAMA-q8_0", "tiny"} {
		if m, ok := c.Lookup(name); !ok || m.ID != "Org/Tiny-GGUF:Q8_0" {
			t.Errorf("Lookup(%q) = %q %v", name, m.ID, ok)
		}
	}
	m, _ := c.Lookup("tiny-llama-Q8_0")
	if !reflect.DeepEqual(m.Aliases, []string{"tiny", "tiny-llama-Q8_0"}) || m.FileID != "tiny-llama-Q8_0" || m.HubName != m.ID {
		t.Errorf("aliases %v, file ID %q, hub name %q", m.Aliases, m.FileID, m.HubName)
	}
	if v, ok := c.Lookup("tiny-llama-Q8_0@long"); !ok || v.ID != "Org/Tiny-GGUF:Q8_0@long" || v.VariantOf != m.ID {
		t.Errorf("the variant's old ID: %q %v (of %q)", v.ID, ok, v.VariantOf)
	}
	if l, _ := c.Lookup("local-Q4_K_M"); l.FileID != "" || l.HubName != "" || len(l.Aliases) != 0 {
		t.Errorf("a file outside the cache changed: %+v", l)
	}
	if w := c.Warnings(); len(w) != 0 {
		t.Errorf("warnings: %v", w)
	}
}

// Two files of one repo giving one name: the refs/main revision's takes it over another
// revision's, the one at the top of the snapshot over one in a folder; the others keep their
// file-name IDs, with a warning.
func TestHubNameCollisions(t *testing.T) {
	hub := t.TempDir()
	blobs := filepath.Join(hub, "models--Org--Repo-GGUF", "blobs")
	for _, b := range []string{"old", "top", "sub"} {
		writeModel(t, filepath.Join(blobs, b), ggufwrite.HeaderOptions{Name: b})
	}
	writeHFRepo(t, hub, "Org", "Repo-GGUF", "new", map[string]map[string]string{
		"old": {"Repo-q8_0.gguf": "old"},
		"new": {"repo-Q8_0.gguf": "top", "Q8_0/repo.gguf": "sub"},
	})
	c, _ := newCatalog(t, Options{Dirs: []string{hub}})
	m, ok := c.Lookup("Org/Repo-GGUF:Q8_0")
	if !ok || m.ID != "Org/Repo-GGUF:Q8_0" || m.Name != "top" {
		t.Fatalf("the name went to %q (%s), want the refs/main top-level file", m.ID, m.Name)
	}
	if got, want := ids(c.Models()), []string{"Org/Repo-GGUF:Q8_0", "Repo-q8_0", "repo"}; !reflect.DeepEqual(got, want) {
		t.Errorf("IDs = %v, want %v", got, want)
	}
	if w := c.Warnings(); len(w) != 2 || !strings.Contains(strings.Join(w, "\n"), "keeps its file name repo") {
		t.Errorf("warnings: %v", w)
	}
}

// A name another model already has as its file-name ID stays that model's; the Hub file keeps its
// file-name ID.
func TestHubNameTakenByAFile(t *testing.T) {
	hub := t.TempDir()
	writeModel(t, filepath.Join(hub, "models--Org--Tiny-GGUF", "blobs", "aaa"), ggufwrite.HeaderOptions{Name: "hub"})
	writeHFRepo(t, hub, "Org", "Tiny-GGUF", "r", map[string]map[string]string{"r": {"tiny-Q8_0.gguf": "aaa"}})
	other := t.TempDir()
	for _, d := range []string{"org", "else"} { // two files of one stem: IDs by their folders
		if err := os.MkdirAll(filepath.Join(other, d), 0o755); err != nil {
			t.Fatal(err)
		}
		writeModel(t, filepath.Join(other, d, "Tiny-GGUF:Q8_0.gguf"), ggufwrite.HeaderOptions{Name: d})
	}
	c, _ := newCatalog(t, Options{Dirs: []string{hub, other}})
	if got, want := ids(c.Models()), []string{"else/Tiny-GGUF:Q8_0", "org/Tiny-GGUF:Q8_0", "tiny-Q8_0"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("IDs = %v, want %v", got, want)
	}
	if m, _ := c.Lookup("org/Tiny-GGUF:Q8_0"); m.Name != "org" {
		t.Errorf("the file's ID resolves to %s", m.Name)
	}
	if m, _ := c.Lookup("Org/Tiny-GGUF:Q8_0"); m.Name != "hub" {
		t.Errorf("the Hub name, spelled exactly, resolves to %s", m.Name)
	}
	if w := c.Warnings(); len(w) != 1 || !strings.Contains(w[0], "already a model's ID") {
		t.Errorf("warnings: %v", w)
	}
}
