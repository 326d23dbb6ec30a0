package catalog

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/llamatray/llamatray/router/testbed/ggufwrite"
)

func TestWalk(t *testing.T) {
	root := t.TempDir()
	writeModel(t, filepath.Join(root, "a.gguf"), ggufwrite.HeaderOptions{Name: "Model A", FileType: 15, ContextLength: 8192})
	writeModel(t, filepath.Join(root, "nested", "deep", "b-Q8_0.gguf"), ggufwrite.HeaderOptions{FileType: 7})
	for i := range 3 {
		writeModel(t, filepath.Join(root, "split", []string{"big-00001-of-00003.gguf", "big-00002-of-00003.gguf", "big-00003-of-00003.gguf"}[i]),
			ggufwrite.HeaderOptions{Blocks: 4, SplitNo: i, SplitCount: 3, Name: "Big"})
	}
	writeModel(t, filepath.Join(root, "vision", "llava.gguf"), ggufwrite.HeaderOptions{})
	writeProjector(t, filepath.Join(root, "vision", "mmproj-llava-f16.gguf"), 64)
	writeModel(t, filepath.Join(root, "x", "dup.gguf"), ggufwrite.HeaderOptions{})
	writeModel(t, filepath.Join(root, "y", "dup.gguf"), ggufwrite.HeaderOptions{})
	writeModel(t, filepath.Join(root, ".trash", "old.gguf"), ggufwrite.HeaderOptions{})
	if err := os.WriteFile(filepath.Join(root, "notes.txt"), []byte("not a model"), 0o644); err != nil {
		t.Fatal(err)
	}

	c, _ := newCatalog(t, Options{Dirs: []string{root}})
	if w := c.Warnings(); len(w) != 0 {
		t.Errorf("warnings: %v", w)
	}
	got := ids(c.Models())
	want := []string{"a", "b-Q8_0", "big", "llava", "x/dup", "y/dup"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("IDs = %v, want %v", got, want)
	}

	a, _ := c.Lookup("a")
	st, _ := os.Stat(filepath.Join(root, "a.gguf"))
	if a.Path != filepath.Join(root, "a.gguf") || !reflect.DeepEqual(a.Files, []string{a.Path}) || a.Splits != 1 ||
		a.SizeBytes != st.Size() || !a.ModTime.Equal(st.ModTime()) || a.Root != root {
		t.Errorf("a: files/size/time/root wrong: %+v", a)
	}
	if a.Architecture != "llama" || a.Name != "Model A" || a.Quantization != "Q4_K_M" || a.ContextLength != 8192 ||
		!a.ChatTemplate || a.Parameters <= 0 || a.Mmproj != "" {
		t.Errorf("a: metadata wrong: %+v", a)
	}
	// Has is Lookup without the copy: exact IDs, other cases of a single ID, not the two dups'
	// shared name in another case, nothing else.
	for _, name := range []string{"a", "A", "b-q8_0", "x/dup", "X/DUP", "dup", "missing", ""} {
		_, found := c.Lookup(name)
		if c.Has(name) != found {
			t.Errorf("Has(%q) = %v, Lookup found %v", name, !found, found)
		}
	}
	if b, _ := c.Lookup("b-Q8_0"); b.Quantization != "Q8_0" {
		t.Errorf("b quantization %q", b.Quantization)
	}

	big, _ := c.Lookup("big")
	var sum int64
	var files []string
	for i := 1; i <= 3; i++ {
		p := filepath.Join(root, "split", "big-0000"+string(rune('0'+i))+"-of-00003.gguf")
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		sum += st.Size()
		files = append(files, p)
	}
	if big.Path != files[0] || !reflect.DeepEqual(big.Files, files) || big.Splits != 3 || big.SizeBytes != sum || big.Name != "Big" {
		t.Errorf("split model: %+v", big)
	}
	single := filepath.Join(t.TempDir(), "whole.gguf")
	writeModel(t, single, ggufwrite.HeaderOptions{Blocks: 4})
	h, err := parseHeader(single, []string{single})
	if err != nil {
		t.Fatal(err)
	}
	if big.Parameters != h.params {
		t.Errorf("split model has %d parameters, the same model in one file %d", big.Parameters, h.params)
	}

	llava, _ := c.Lookup("llava")
	if llava.Mmproj != filepath.Join(root, "vision", "mmproj-llava-f16.gguf") {
		t.Errorf("llava projector = %q", llava.Mmproj)
	}
	if _, ok := c.Lookup("mmproj-llava-f16"); ok {
		t.Error("the projector is listed as a model")
	}
}

func TestSplitWithMissingShard(t *testing.T) {
	root := t.TempDir()
	for _, i := range []int{0, 2} {
		writeModel(t, filepath.Join(root, []string{"m-00001-of-00003.gguf", "", "m-00003-of-00003.gguf"}[i]),
			ggufwrite.HeaderOptions{SplitNo: i, SplitCount: 3})
	}
	writeModel(t, filepath.Join(root, "ok.gguf"), ggufwrite.HeaderOptions{})
	c, lb := newCatalog(t, Options{Dirs: []string{root}})
	if got := ids(c.Models()); !reflect.DeepEqual(got, []string{"ok"}) {
		t.Errorf("IDs = %v", got)
	}
	w := c.Warnings()
	if len(w) != 1 || !strings.Contains(w[0], "m-00001-of-00003.gguf: split model is missing shard 2 of 3") {
		t.Errorf("warnings = %v", w)
	}
	if lb.count("missing shard 2 of 3") != 1 {
		t.Errorf("log:\n%s", lb)
	}
}

func TestClashIDs(t *testing.T) {
	base := t.TempDir()
	r1, r2 := filepath.Join(base, "r1"), filepath.Join(base, "r2")
	writeModel(t, filepath.Join(r1, "models", "foo.gguf"), ggufwrite.HeaderOptions{})
	writeModel(t, filepath.Join(r2, "models", "foo.gguf"), ggufwrite.HeaderOptions{})
	writeModel(t, filepath.Join(r1, "other", "foo.gguf"), ggufwrite.HeaderOptions{})
	writeModel(t, filepath.Join(r1, "bar.gguf"), ggufwrite.HeaderOptions{})
	writeModel(t, filepath.Join(r2, "bar.gguf"), ggufwrite.HeaderOptions{})
	writeModel(t, filepath.Join(r2, "solo.gguf"), ggufwrite.HeaderOptions{})

	c, _ := newCatalog(t, Options{Dirs: []string{r1, r2}})
	want := []string{"other/foo", "r1/bar", "r1/models/foo", "r2/bar", "r2/models/foo", "solo"}
	if got := ids(c.Models()); !reflect.DeepEqual(got, want) {
		t.Errorf("IDs = %v, want %v", got, want)
	}
	m, _ := c.Lookup("r2/models/foo")
	if m.Path != filepath.Join(r2, "models", "foo.gguf") || m.Root != r2 {
		t.Errorf("r2/models/foo = %+v", m)
	}

	// Overlapping folders list each file once.
	c2, _ := newCatalog(t, Options{Dirs: []string{base, r1}})
	if got := len(c2.Models()); got != 6 {
		t.Errorf("overlapping folders: %d models, want 6: %v", got, ids(c2.Models()))
	}
}

// writeHFRepo lays out a Hugging Face hub cache repo: blobs, refs/main and snapshot links.
func writeHFRepo(t *testing.T, hub, org, name, mainRev string, snapshots map[string]map[string]string) {
	t.Helper()
	repo := filepath.Join(hub, "models--"+org+"--"+name)
	if err := os.MkdirAll(filepath.Join(repo, "refs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "refs", "main"), []byte(mainRev), 0o644); err != nil {
		t.Fatal(err)
	}
	for rev, files := range snapshots {
		for file, blob := range files {
			link := filepath.Join(repo, "snapshots", rev, file)
			if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
				t.Fatal(err)
			}
			rel, _ := filepath.Rel(filepath.Dir(link), filepath.Join(repo, "blobs", blob))
			if err := os.Symlink(rel, link); err != nil {
				t.Skipf("symlinks unavailable: %v", err)
			}
		}
	}
}

func TestHuggingFaceCache(t *testing.T) {
	hub := t.TempDir()
	blobs := filepath.Join(hub, "models--org--name", "blobs")
	writeModel(t, filepath.Join(blobs, "aaa"), ggufwrite.HeaderOptions{Name: "current"})
	writeModel(t, filepath.Join(blobs, "old"), ggufwrite.HeaderOptions{Name: "old revision"})
	writeModel(t, filepath.Join(blobs, "bbb.incomplete"), ggufwrite.HeaderOptions{})
	writeProjector(t, filepath.Join(blobs, "ppp"), 64)
	writeHFRepo(t, hub, "org", "name", "rev2", map[string]map[string]string{
		"rev1": {"model-Q4_K_M.gguf": "old"},
		"rev2": {"model-Q4_K_M.gguf": "aaa", "model-Q8_0.gguf": "bbb.incomplete", "gone.gguf": "deleted", "mmproj-model-f16.gguf": "ppp"},
	})
	writeModel(t, filepath.Join(hub, "models--other--repo", "blobs", "ccc"), ggufwrite.HeaderOptions{})
	writeModel(t, filepath.Join(hub, "models--other--repo", "blobs", "ddd"), ggufwrite.HeaderOptions{})
	writeHFRepo(t, hub, "other", "repo", "r", map[string]map[string]string{
		"r": {"model-Q4_K_M.gguf": "ccc", "sub/unique.gguf": "ddd"},
	})

	c, _ := newCatalog(t, Options{Dirs: []string{hub}})
	if w := c.Warnings(); len(w) != 0 {
		t.Errorf("warnings: %v", w)
	}
	// Named by their Hub names (unique.gguf by its header's quant); the file-name IDs stay aliases.
	want := []string{"org/name:Q4_K_M", "other/repo:F32", "other/repo:Q4_K_M"}
	if got := ids(c.Models()); !reflect.DeepEqual(got, want) {
		t.Fatalf("IDs = %v, want %v", got, want)
	}
	for id, old := range map[string]string{"org/name:Q4_K_M": "org/name/model-Q4_K_M", "other/repo:Q4_K_M": "other/repo/model-Q4_K_M", "other/repo:F32": "unique"} {
		if m, ok := c.Lookup(old); !ok || m.ID != id || m.FileID != old || !slices.Contains(m.Aliases, old) {
			t.Errorf("file-name ID %s: %v %s %q %v", old, ok, m.ID, m.FileID, m.Aliases)
		}
	}
	m, _ := c.Lookup("org/name/model-Q4_K_M")
	snap := filepath.Join(hub, "models--org--name", "snapshots", "rev2")
	if m.Path != filepath.Join(snap, "model-Q4_K_M.gguf") || m.Name != "current" {
		t.Errorf("want the refs/main revision, got %s (%s)", m.Path, m.Name)
	}
	if m.Mmproj != filepath.Join(snap, "mmproj-model-f16.gguf") {
		t.Errorf("projector = %q", m.Mmproj)
	}
	if st, _ := os.Stat(filepath.Join(blobs, "aaa")); m.SizeBytes != st.Size() {
		t.Errorf("size %d is not the blob's %d", m.SizeBytes, st.Size())
	}
	if o, _ := c.Lookup("other/repo/model-Q4_K_M"); o.Mmproj != "" {
		t.Errorf("projector crossed repos: %q", o.Mmproj)
	}
}

func TestAliasesHiddenLookup(t *testing.T) {
	root := t.TempDir()
	for _, n := range []string{"alpha", "beta", "Gamma", "gamma"} {
		writeModel(t, filepath.Join(root, strings.ToLower(n)+map[bool]string{true: "-2", false: ""}[n == "Gamma"], n+".gguf"), ggufwrite.HeaderOptions{})
	}
	aliases := map[string][]string{"alpha": {"first", "A1", "beta", " ", "first"}, "beta": {"b"}, "gamma": {"b"}}
	c, _ := newCatalog(t, Options{
		Dirs:    []string{root},
		Aliases: func(id string) []string { return aliases[id] },
		Hidden:  func(id string) bool { return id == "beta" },
	})
	if got := ids(c.Models()); !reflect.DeepEqual(got, []string{"Gamma", "alpha", "gamma"}) {
		t.Errorf("visible IDs = %v", got)
	}
	a, _ := c.Lookup("alpha")
	if !reflect.DeepEqual(a.Aliases, []string{"first", "A1", "beta"}) {
		t.Errorf("aliases = %q", a.Aliases)
	}
	for name, want := range map[string]string{
		"alpha": "alpha", "first": "alpha", "FIRST": "alpha", "a1": "alpha", "ALPHA": "alpha",
		"beta":  "beta", // an ID wins over another model's alias; hidden models are still found
		"b":     "beta", // the first model (by ID) holding an alias keeps it
		"Gamma": "Gamma", "gamma": "gamma",
	} {
		m, ok := c.Lookup(name)
		if !ok || m.ID != want {
			t.Errorf("Lookup(%q) = %q, %v; want %q", name, m.ID, ok, want)
		}
	}
	for _, name := range []string{"GAMMA", "nope", ""} {
		if m, ok := c.Lookup(name); ok {
			t.Errorf("Lookup(%q) = %q, want not found", name, m.ID)
		}
	}
	if w := c.Warnings(); len(w) != 2 || !strings.Contains(w[0], `alpha: alias "beta" is already the name of beta`) ||
		!strings.Contains(w[1], `gamma: alias "b" is already the name of beta`) {
		t.Errorf("warnings = %q", w)
	}
	// Results are copies.
	a.Aliases[0] = "changed"
	if again, _ := c.Lookup("alpha"); again.Aliases[0] != "first" {
		t.Error("Lookup returned shared memory")
	}
}

func TestSuggest(t *testing.T) {
	root := t.TempDir()
	for _, n := range []string{"qwen2.5-7b-instruct-q4_k_m", "llama-3-8b-instruct", "phi-3-mini", "secret"} {
		writeModel(t, filepath.Join(root, n+".gguf"), ggufwrite.HeaderOptions{})
	}
	c, _ := newCatalog(t, Options{
		Dirs:    []string{root},
		Aliases: func(id string) []string { return map[string][]string{"phi-3-mini": {"phi"}}[id] },
		Hidden:  func(id string) bool { return id == "secret" },
	})
	tests := []struct {
		name string
		want []string
	}{
		{"qwen", []string{"qwen2.5-7b-instruct-q4_k_m"}},
		{"llama-3-8b-instrcut", []string{"llama-3-8b-instruct"}},
		{"LLAMA-3-8B", []string{"llama-3-8b-instruct"}},
		{"phj", []string{"phi"}},
		{"instruct", []string{"llama-3-8b-instruct", "qwen2.5-7b-instruct-q4_k_m"}},
		{"secret", nil},
		{"zzzzzzzz", nil},
	}
	for _, tt := range tests {
		if got := c.Suggest(tt.name, 3); !slices.Equal(got, tt.want) {
			t.Errorf("Suggest(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
	if got := c.Suggest("instruct", 1); len(got) != 1 {
		t.Errorf("Suggest with n=1 gave %v", got)
	}
}

func TestMissingDir(t *testing.T) {
	root := t.TempDir()
	writeModel(t, filepath.Join(root, "m.gguf"), ggufwrite.HeaderOptions{})
	missing := filepath.Join(root, "nope")
	c, lb := newCatalog(t, Options{Dirs: []string{missing, root}})
	if got := ids(c.Models()); !reflect.DeepEqual(got, []string{"m"}) {
		t.Errorf("IDs = %v", got)
	}
	w := c.Warnings()
	if len(w) != 1 || !strings.Contains(w[0], missing) || !strings.Contains(w[0], "does not exist") {
		t.Errorf("warnings = %v", w)
	}
	if !strings.Contains(lb.String(), "level=WARN") || !strings.Contains(lb.String(), missing) {
		t.Errorf("no warning logged:\n%s", lb)
	}
}

func TestNonModelFiles(t *testing.T) {
	root := t.TempDir()
	writeModel(t, filepath.Join(root, "model.gguf"), ggufwrite.HeaderOptions{})
	writeModel(t, filepath.Join(root, "lora-adapter.gguf"), ggufwrite.HeaderOptions{ExtraKVs: []ggufwrite.KV{
		{Key: "general.type", Value: "adapter"}, {Key: "adapter.type", Value: "lora"}}})
	writeModel(t, filepath.Join(root, "mmproj-wrong.gguf"), ggufwrite.HeaderOptions{})
	writeProjector(t, filepath.Join(root, "sub", "vision-tower.gguf"), 64) // a projector by its header
	writeModel(t, filepath.Join(root, "sub", "vlm.gguf"), ggufwrite.HeaderOptions{})

	c, lb := newCatalog(t, Options{Dirs: []string{root}})
	if got := ids(c.Models()); !reflect.DeepEqual(got, []string{"model", "vlm"}) {
		t.Errorf("IDs = %v", got)
	}
	w := c.Warnings()
	if len(w) != 1 || !strings.Contains(w[0], "mmproj-wrong.gguf: named like a projector (mmproj) but holds a model") {
		t.Errorf("warnings = %v", w)
	}
	if !strings.Contains(lb.String(), "skipped, not a model") || !strings.Contains(lb.String(), "not a model (adapter file)") {
		t.Errorf("adapter not logged at debug:\n%s", lb)
	}
	if m, _ := c.Lookup("vlm"); m.Mmproj != filepath.Join(root, "sub", "vision-tower.gguf") {
		t.Errorf("projector found by header = %q", m.Mmproj)
	}
	if m, _ := c.Lookup("model"); m.Mmproj != "" {
		t.Errorf("model paired with %q", m.Mmproj)
	}
}
