package catalog

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/testbed/ggufwrite"
)

// testStore lays out an Ollama store as Ollama writes it: blobs/sha256-HEX named by their
// content's digest, and manifests/HOST/NAMESPACE/MODEL/TAG.
type testStore struct {
	t   testing.TB
	dir string
}

func newTestStore(t testing.TB, dir string) *testStore {
	t.Helper()
	for _, d := range []string{"manifests", "blobs"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return &testStore{t: t, dir: dir}
}

// put writes data as a blob and returns its layer.
func (s *testStore) put(media string, data []byte) ollamaLayer {
	s.t.Helper()
	sum := sha256.Sum256(data)
	l := ollamaLayer{MediaType: media, Digest: "sha256:" + hex.EncodeToString(sum[:]), Size: int64(len(data))}
	if err := os.WriteFile(s.blobPath(l), data, 0o644); err != nil {
		s.t.Fatal(err)
	}
	return l
}

// putFile moves the file at p into the store as a blob and returns its layer.
func (s *testStore) putFile(media, p string) ollamaLayer {
	s.t.Helper()
	f, err := os.Open(p)
	if err != nil {
		s.t.Fatal(err)
	}
	h := sha256.New()
	n, err := io.Copy(h, f)
	f.Close()
	if err != nil {
		s.t.Fatal(err)
	}
	l := ollamaLayer{MediaType: media, Digest: "sha256:" + hex.EncodeToString(h.Sum(nil)), Size: n}
	if err := os.Rename(p, s.blobPath(l)); err != nil {
		s.t.Fatal(err)
	}
	return l
}

// model writes a header-only GGUF model fixture as a blob.
func (s *testStore) model(o ggufwrite.HeaderOptions) ollamaLayer {
	s.t.Helper()
	p := filepath.Join(s.t.TempDir(), "m.gguf")
	writeModel(s.t, p, o)
	return s.putFile(mediaModel, p)
}

// projector writes a projector fixture as a blob.
func (s *testStore) projector(width int) ollamaLayer {
	s.t.Helper()
	p := filepath.Join(s.t.TempDir(), "p.gguf")
	writeProjector(s.t, p, width)
	return s.putFile(mediaProjector, p)
}

func (s *testStore) blobPath(l ollamaLayer) string {
	return filepath.Join(s.dir, "blobs", strings.Replace(l.Digest, ":", "-", 1))
}

// config writes the config blob Ollama writes for a GGUF model.
func (s *testStore) config(extra map[string]any) ollamaLayer {
	s.t.Helper()
	c := map[string]any{"model_format": "gguf", "model_family": "llama", "model_type": "1B", "file_type": "Q4_K_M", "architecture": "amd64", "os": "linux"}
	for k, v := range extra {
		c[k] = v
	}
	b, err := json.Marshal(c)
	if err != nil {
		s.t.Fatal(err)
	}
	return s.put("application/vnd.docker.container.image.v1+json", b)
}

// manifest writes the manifest at name ("registry.ollama.ai/library/llama3.2/3b") with a config
// blob and layers, and returns its path.
func (s *testStore) manifest(name string, layers ...ollamaLayer) string {
	s.t.Helper()
	m := map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.docker.distribution.manifest.v2+json",
		"config":        s.config(nil),
		"layers":        layers,
	}
	b, err := json.Marshal(m)
	if err != nil {
		s.t.Fatal(err)
	}
	return s.raw(name, b)
}

// raw writes bytes as the manifest at name and returns its path.
func (s *testStore) raw(name string, b []byte) string {
	s.t.Helper()
	p := filepath.Join(s.dir, "manifests", filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		s.t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		s.t.Fatal(err)
	}
	return p
}

// text writes a small layer.
func (s *testStore) text(media, text string) ollamaLayer { return s.put(media, []byte(text)) }

// treeState records every path under dir with its type, size, mode and time, to show that a
// scan changed nothing there.
func treeState(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		st, err := os.Lstat(p)
		if err != nil {
			return err
		}
		out[p] = st.Mode().String() + " " + st.ModTime().Format(time.RFC3339Nano) + " " + strconv.FormatInt(st.Size(), 10)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// warningFor returns the warnings that start with file.
func warningFor(ws []string, file string) []string {
	var out []string
	for _, w := range ws {
		if strings.HasPrefix(w, file+": ") {
			out = append(out, w)
		}
	}
	return out
}
