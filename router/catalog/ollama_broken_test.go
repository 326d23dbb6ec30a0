package catalog

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/llamatray/llamatray/router/testbed"
	"github.com/llamatray/llamatray/router/testbed/ggufwrite"
)

// brokenCase is a store with one thing wrong, beside a good model.
type brokenCase struct {
	name string
	// build breaks the store; it returns the file the warning must be about and a name the
	// broken model would have.
	build  func(t *testing.T, s *testStore) (file, name string)
	want   string // in the one warning about file; "" = no warning at all
	listed bool   // the name still finds a model
}

func digestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// rawManifest writes a manifest whose layers are given as they are, unchecked.
func rawManifest(t *testing.T, s *testStore, name string, config any, layers ...any) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"schemaVersion": 2, "config": config, "layers": layers})
	if err != nil {
		t.Fatal(err)
	}
	return s.raw(name, b)
}

func symlinkOrSkip(t *testing.T, target, link string) { testbed.Symlink(t, target, link) }

func brokenCases() []brokenCase {
	const lib = "registry.ollama.ai/library/"
	one := func(media, digest string, size int64) func(t *testing.T, s *testStore) (string, string) {
		return func(t *testing.T, s *testStore) (string, string) {
			return rawManifest(t, s, lib+"bad/latest", s.config(nil), ollamaLayer{MediaType: media, Digest: digest, Size: size}), "bad"
		}
	}
	hex64 := strings.Repeat("ab", 32)
	return []brokenCase{
		{name: "not JSON", build: func(t *testing.T, s *testStore) (string, string) {
			return s.raw(lib+"bad/latest", []byte("{not json")), "bad"
		}, want: "Ollama model bad:latest: the manifest is not valid JSON"},
		{name: "schema 1", build: func(t *testing.T, s *testStore) (string, string) {
			return s.raw(lib+"bad/latest", []byte(`{"schemaVersion":1,"layers":[]}`)), "bad"
		}, want: "schemaVersion is 1, not 2"},
		{name: "manifest over 1 MiB", build: func(t *testing.T, s *testStore) (string, string) {
			return s.raw(lib+"bad/latest", bytes.Repeat([]byte(" "), maxOllamaFile+1)), "bad"
		}, want: "the manifest: 1048577 bytes, over the 1048576-byte limit"},
		{name: "missing model blob", build: one(mediaModel, digestOf([]byte("never written")), 13),
			want: "model blob sha256-" + strings.TrimPrefix(digestOf([]byte("never written")), "sha256:") + " is missing from "},
		{name: "digest climbs out", build: one(mediaModel, "sha256:../../../../etc/passwd", 10),
			want: `layer 1 ("application/vnd.ollama.image.model"): digest "sha256:../../../../etc/passwd" is not sha256 and 64 hex digits`},
		{name: "digest with a path after it", build: one(mediaModel, "sha256-"+hex64+"/../../x", 10), want: "is not sha256 and 64 hex digits"},
		{name: "absolute digest", build: one(mediaModel, "/etc/passwd", 10), want: `digest "/etc/passwd" is not sha256`},
		{name: "not sha256", build: one(mediaProjector, "sha512:"+hex64+hex64, 10), want: "is not sha256 and 64 hex digits"},
		{name: "config digest climbs out", build: func(t *testing.T, s *testStore) (string, string) {
			return rawManifest(t, s, lib+"bad/latest", ollamaLayer{Digest: "sha256:../config"}, s.model(ggufwrite.HeaderOptions{})), "bad"
		}, want: `the manifest's config: digest "sha256:../config"`},
		{name: "negative size", build: one(mediaModel, "sha256:"+hex64, -1), want: "has size -1"},
		{name: "two model layers", build: func(t *testing.T, s *testStore) (string, string) {
			return s.manifest(lib+"bad/latest", s.model(ggufwrite.HeaderOptions{}), s.model(ggufwrite.HeaderOptions{Name: "2"})), "bad"
		}, want: "two model layers"},
		{name: "not GGUF", build: func(t *testing.T, s *testStore) (string, string) {
			l := s.put(mediaModel, []byte("PK\x03\x04 a zip file, not a model, but long enough to be read"))
			return s.manifest(lib+"bad/latest", l), "bad"
		}, want: "Ollama model bad:latest: model blob sha256-"},
		{name: "blob shorter than its manifest says", build: func(t *testing.T, s *testStore) (string, string) {
			l := s.model(ggufwrite.HeaderOptions{})
			if err := os.Truncate(s.blobPath(l), l.Size-1000); err != nil {
				t.Fatal(err)
			}
			return s.manifest(lib+"bad/latest", l), "bad"
		}, want: "bytes, the manifest says"},
		{name: "truncated, and the manifest agrees", build: func(t *testing.T, s *testStore) (string, string) {
			b := fixtureBytes(t, tiny(ggufwrite.HeaderOptions{}))
			return s.manifest(lib+"bad/latest", s.put(mediaModel, b[:len(b)-1000])), "bad"
		}, want: "tensor data needs"},
		{name: "model layer holds a projector", build: func(t *testing.T, s *testStore) (string, string) {
			l := s.projector(64)
			l.MediaType = mediaModel
			return s.manifest(lib+"bad/latest", l), "bad"
		}, want: "the model layer holds a projector"},
		{name: "projector layer holds a model", build: func(t *testing.T, s *testStore) (string, string) {
			p := s.model(ggufwrite.HeaderOptions{Name: "not a projector"})
			p.MediaType = mediaProjector
			return s.manifest(lib+"vlm/latest", s.model(ggufwrite.HeaderOptions{Name: "vlm"}), p), "vlm"
		}, want: "Ollama model vlm:latest: projector blob sha256-", listed: true},
		{name: "projector missing", build: func(t *testing.T, s *testStore) (string, string) {
			return s.manifest(lib+"bad/latest", s.model(ggufwrite.HeaderOptions{}), ollamaLayer{MediaType: mediaProjector, Digest: "sha256:" + hex64, Size: 5}), "bad"
		}, want: "projector blob sha256-" + hex64 + " is missing"},
		{name: "params not an object", build: func(t *testing.T, s *testStore) (string, string) {
			return s.manifest(lib+"bad/latest", s.model(ggufwrite.HeaderOptions{}), s.text(mediaParams, `[1,2]`)), "bad"
		}, want: "the params blob is not a JSON object"},
		{name: "params blob missing", build: func(t *testing.T, s *testStore) (string, string) {
			return s.manifest(lib+"bad/latest", s.model(ggufwrite.HeaderOptions{}), ollamaLayer{MediaType: mediaParams, Digest: "sha256:" + hex64, Size: 2}), "bad"
		}, want: "params blob sha256-" + hex64 + " is missing"},
		{name: "template blob over 1 MiB", build: func(t *testing.T, s *testStore) (string, string) {
			return s.manifest(lib+"bad/latest", s.model(ggufwrite.HeaderOptions{}), s.text(mediaTemplate, strings.Repeat("x", maxOllamaFile+1))), "bad"
		}, want: "template blob sha256-"},
		{name: "LoRA adapter", build: func(t *testing.T, s *testStore) (string, string) {
			return s.manifest(lib+"bad/latest", s.model(ggufwrite.HeaderOptions{}), s.text(mediaAdapter, "lora")), "bad"
		}, want: "LoRA adapter"},
		{name: "no model layer", build: func(t *testing.T, s *testStore) (string, string) {
			return s.manifest(lib+"bad/latest", s.text(mediaTemplate, "t")), "bad"
		}, want: "has no model layer"},
		{name: "tensor layers", build: func(t *testing.T, s *testStore) (string, string) {
			return s.manifest(lib+"bad/latest", s.text(mediaTensor, "w1"), s.text(mediaTensor, "w2")), "bad"
		}, want: "Ollama tensor layers"},
		{name: "blob is a folder", build: func(t *testing.T, s *testStore) (string, string) {
			l := ollamaLayer{MediaType: mediaModel, Digest: "sha256:" + hex64, Size: 5}
			if err := os.Mkdir(s.blobPath(l), 0o755); err != nil {
				t.Fatal(err)
			}
			return s.manifest(lib+"bad/latest", l), "bad"
		}, want: "is not a regular file"},
		{name: "blob is a link out of the store", build: func(t *testing.T, s *testStore) (string, string) {
			outside := filepath.Join(t.TempDir(), "secret.gguf")
			writeModel(t, outside, ggufwrite.HeaderOptions{})
			b, err := os.ReadFile(outside)
			if err != nil {
				t.Fatal(err)
			}
			l := ollamaLayer{MediaType: mediaModel, Digest: digestOf(b), Size: int64(len(b))}
			symlinkOrSkip(t, outside, s.blobPath(l))
			return s.manifest(lib+"bad/latest", l), "bad"
		}, want: "cannot be read inside Ollama's blobs folder"},
		{name: "blob is a dangling link", build: func(t *testing.T, s *testStore) (string, string) {
			l := ollamaLayer{MediaType: mediaModel, Digest: "sha256:" + hex64, Size: 5}
			symlinkOrSkip(t, "sha256-gone", s.blobPath(l))
			return s.manifest(lib+"bad/latest", l), "bad"
		}, want: "is a link to nothing"},
		{name: "manifest folder links out of the store", build: func(t *testing.T, s *testStore) (string, string) {
			outside := newTestStore(t, t.TempDir())
			outside.manifest(lib+"evil/latest", s.model(ggufwrite.HeaderOptions{}))
			link := filepath.Join(s.dir, "manifests", "registry.ollama.ai", "library", "evil")
			symlinkOrSkip(t, filepath.Join(outside.dir, "manifests", "registry.ollama.ai", "library", "evil"), link)
			return link, "evil"
		}, want: "a link that cannot be followed inside Ollama's manifests folder"},
		{name: "name with a space", build: func(t *testing.T, s *testStore) (string, string) {
			return filepath.Dir(s.manifest(lib+"bad name/latest", s.model(ggufwrite.HeaderOptions{}))), "bad name"
		}, want: `"bad name" is not a valid Ollama model name`},
		{name: "namespace with a dot", build: func(t *testing.T, s *testStore) (string, string) {
			m := s.manifest("registry.ollama.ai/li.brary/m/latest", s.model(ggufwrite.HeaderOptions{}))
			return filepath.Dir(filepath.Dir(m)), "li.brary/m"
		}, want: `"li.brary" is not a valid Ollama namespace name`},
		{name: "tag over 80 bytes", build: func(t *testing.T, s *testStore) (string, string) {
			tag := strings.Repeat("t", 81)
			return s.manifest(lib+"m/"+tag, s.model(ggufwrite.HeaderOptions{})), "m:" + tag
		}, want: "is not a valid Ollama tag name"},
		{name: "file where a folder belongs", build: func(t *testing.T, s *testStore) (string, string) {
			return s.raw("registry.ollama.ai/README", []byte("hello")), "README"
		}, want: "not where Ollama keeps a manifest"},
		{name: "folder where a manifest belongs", build: func(t *testing.T, s *testStore) (string, string) {
			return filepath.Dir(s.manifest(lib+"m/latest/extra", s.model(ggufwrite.HeaderOptions{}))), "m:latest"
		}, want: "not where Ollama keeps a manifest"},
		{name: "cloud model", build: func(t *testing.T, s *testStore) (string, string) {
			c := s.config(map[string]any{"remote_host": "https://ollama.com:443", "remote_model": "gpt-oss:120b"})
			return rawManifest(t, s, lib+"gpt-oss/120b-cloud", c), "gpt-oss:120b-cloud"
		}},
		{name: "a skill, not a model", build: func(t *testing.T, s *testStore) (string, string) {
			return s.manifest(lib+"skill/helper/latest", s.text("application/vnd.ollama.skill", "x")), "skill/helper"
		}},
		{name: "hidden files", build: func(t *testing.T, s *testStore) (string, string) {
			s.raw(".DS_Store", []byte("x"))
			return s.raw("registry.ollama.ai/library/.hidden/latest", []byte("{")), ".hidden"
		}},
	}
}

func TestOllamaBrokenStores(t *testing.T) {
	for _, tt := range append(brokenCases(), brokenCase{
		name: "backslashes in a name", // they would climb out where backslashes separate folders
		build: func(t *testing.T, s *testStore) (string, string) {
			if runtime.GOOS == "windows" {
				t.Skip("backslashes separate folders here")
			}
			return filepath.Dir(s.manifest(`registry.ollama.ai/library/x\..\..\y/latest`, s.model(ggufwrite.HeaderOptions{}))), `x\..\..\y`
		},
		want: `is not a valid Ollama model name`,
	}) {
		t.Run(tt.name, func(t *testing.T) {
			s := newTestStore(t, filepath.Join(t.TempDir(), "models"))
			s.manifest("registry.ollama.ai/library/good/latest", s.model(ggufwrite.HeaderOptions{Name: "good"}))
			file, name := tt.build(t, s)
			before := treeState(t, s.dir)

			c, _ := newCatalog(t, Options{Dirs: []string{s.dir}})
			if m, ok := c.Lookup("good"); !ok || m.Name != "good" {
				t.Errorf("the good model is gone: %v", ids(c.Models()))
			}
			if _, ok := c.Lookup(name); ok != tt.listed {
				t.Errorf("Lookup(%q) = %v, want %v; IDs %v", name, ok, tt.listed, ids(c.Models()))
			}
			if n := len(c.Models()); n != 1+map[bool]int{true: 1}[tt.listed] {
				t.Errorf("%d models: %v", n, ids(c.Models()))
			}
			w := c.Warnings()
			switch {
			case tt.want == "" && len(w) != 0:
				t.Errorf("warnings: %v", w)
			case tt.want != "" && (len(w) != 1 || len(warningFor(w, file)) != 1 || !strings.Contains(w[0], tt.want)):
				t.Errorf("warnings:\n%s\nwant one about %s saying %q", strings.Join(w, "\n"), file, tt.want)
			}
			if c.Changed(t.Context()) {
				t.Error("Changed after a scan of an unchanged store")
			}
			if after := treeState(t, s.dir); !reflect.DeepEqual(before, after) {
				t.Error("the store changed")
			}
		})
	}
}

// FuzzOllamaManifest reads arbitrary bytes as a manifest of a store that holds a model and a
// projector blob. Whatever they say, the walk must not panic, list only files inside the store's
// blobs folder, and change nothing in the store.
func FuzzOllamaManifest(f *testing.F) {
	dir := filepath.Join(f.TempDir(), "models")
	s := newTestStore(f, dir)
	model := s.model(ggufwrite.HeaderOptions{})
	proj := s.projector(64)
	params := s.text(mediaParams, `{"temperature":0.5}`)
	seed := func(config any, layers ...any) []byte {
		b, err := json.Marshal(map[string]any{"schemaVersion": 2, "config": config, "layers": layers})
		if err != nil {
			f.Fatal(err)
		}
		return b
	}
	f.Add(seed(s.config(nil), model, proj, params))
	f.Add(seed(nil, ollamaLayer{MediaType: mediaModel, Digest: "sha256:../../../etc/passwd"}))
	f.Add(seed(nil, ollamaLayer{MediaType: mediaModel, Digest: strings.Replace(model.Digest, ":", "-", 1) + "/.."}))
	f.Add(seed(nil, model, ollamaLayer{MediaType: mediaProjector, Digest: model.Digest, Size: model.Size}))
	f.Add([]byte(`{"schemaVersion":2,"layers":[{"mediaType":"application/vnd.ollama.image.model","digest":"sha256:` + strings.Repeat("0", 64) + `"}]}`))
	f.Add([]byte(`{`))
	manifest := filepath.Join(dir, "manifests", "registry.ollama.ai", "library", "fuzz", "latest")
	if err := os.MkdirAll(filepath.Dir(manifest), 0o755); err != nil {
		f.Fatal(err)
	}
	blobs := filepath.Join(dir, "blobs")
	blobsReal, err := filepath.EvalSymlinks(blobs)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(manifest, data, 0o644); err != nil {
			t.Fatal(err)
		}
		before := treeState(t, blobs)
		l := list(t.Context(), []string{dir})
		for _, fd := range l.files {
			if rel, err := filepath.Rel(blobs, fd.path); err != nil || !filepath.IsLocal(rel) || fd.blob == "" {
				t.Fatalf("listed %s (%q), not a blob of the store", fd.path, fd.blob)
			}
			if rel, err := filepath.Rel(blobsReal, fd.real); err != nil || !filepath.IsLocal(rel) {
				t.Fatalf("listed %s, which is %s", fd.path, fd.real)
			}
		}
		if after := treeState(t, blobs); !reflect.DeepEqual(before, after) {
			t.Fatal("the store's blobs changed")
		}
	})
}
