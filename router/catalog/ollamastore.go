package catalog

// Reading an Ollama store: see ollama.go.

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Media types of an Ollama manifest's layers.
const (
	mediaModel     = "application/vnd.ollama.image.model"
	mediaProjector = "application/vnd.ollama.image.projector"
	mediaParams    = "application/vnd.ollama.image.params"
	mediaTemplate  = "application/vnd.ollama.image.template"
	mediaPrompt    = "application/vnd.ollama.image.prompt" // the template's older name
	mediaSystem    = "application/vnd.ollama.image.system"
	mediaAdapter   = "application/vnd.ollama.image.adapter"
	mediaTensor    = "application/vnd.ollama.image.tensor" // weights Ollama's own engine loads, tensor by tensor
)

// Bounds of reading a store.
const (
	maxOllamaFile      = 1 << 20 // a manifest, or a params, template, system or config blob
	maxOllamaEntries   = 4096    // entries read from one folder under manifests/
	maxOllamaManifests = 10000   // manifests read from one store
	maxOllamaLayers    = 4096    // layers of one manifest
)

// ollamaKinds are the folders Ollama puts between a namespace and a model for things that are
// not models (HOST/NAMESPACE/KIND/MODEL/TAG).
var ollamaKinds = map[string]bool{"skill": true, "agent": true, "mcp": true}

// digestRe is a digest as Ollama accepts one (its manifest.BlobsPath): the only form a blob's
// name is made from.
var digestRe = regexp.MustCompile(`^sha256[:-][0-9a-fA-F]{64}$`)

// errCloud marks a manifest of a model Ollama runs elsewhere (a cloud model): no weights are on
// this machine, so it is left out without a warning.
var errCloud = errors.New("a cloud model")

// ollamaParts names the parts of a manifest's path below manifests/, by depth.
var ollamaParts = [...]string{"registry host", "namespace", "model", "tag"}

// isOllamaStore reports whether the folder dir, whose entries are given, is an Ollama store.
func isOllamaStore(dir string, entries []fs.DirEntry) bool {
	var manifests, blobs bool
	for _, e := range entries {
		switch e.Name() {
		case "manifests":
			manifests = isDirEntry(dir, e)
		case "blobs":
			blobs = isDirEntry(dir, e)
		}
	}
	return manifests && blobs
}

func isDirEntry(dir string, e fs.DirEntry) bool {
	if e.IsDir() {
		return true
	}
	if e.Type()&fs.ModeSymlink == 0 {
		return false
	}
	st, err := os.Stat(filepath.Join(dir, e.Name()))
	return err == nil && st.IsDir()
}

// ollamaStore is one store being read.
type ollamaStore struct {
	w         *walker
	root      string // the scanned folder it is in
	dir       string // the store
	blobsDir  string
	manifests *os.Root // dir/manifests
	blobs     *os.Root // dir/blobs
	read      int      // manifests read
}

// ollamaStore lists the models of the store dir, found in the scanned folder root.
func (w *walker) ollamaStore(root, dir string) {
	real := realPath(dir)
	if w.stores[real] {
		return
	}
	w.stores[real] = true
	w.printBuf = append(w.printBuf, "ollama\x00"+dir)
	s := &ollamaStore{w: w, root: root, dir: dir, blobsDir: filepath.Join(dir, "blobs")}
	var err error
	if s.manifests, err = os.OpenRoot(filepath.Join(dir, "manifests")); err != nil {
		w.warn(dir, fmt.Sprintf("cannot read Ollama's manifests: %v", err))
		return
	}
	defer s.manifests.Close()
	if s.blobs, err = os.OpenRoot(s.blobsDir); err != nil {
		w.warn(dir, fmt.Sprintf("cannot read Ollama's blobs: %v", err))
		return
	}
	defer s.blobs.Close()
	s.folder(nil)
}

// warn reports a problem met in a walk; it is part of the fingerprint.
func (w *walker) warn(file, reason string) {
	w.l.problems = append(w.l.problems, problem{file, reason})
	w.printBuf = append(w.printBuf, "problem\x00"+file+"\x00"+reason)
}

// folder reads the folder of manifests/ at rel, whose length is its depth: the registry hosts,
// then namespaces, models, and the manifests, one a tag.
func (s *ollamaStore) folder(rel []string) {
	if s.w.ctx.Err() != nil {
		return
	}
	name := path.Join(rel...)
	name = cmp.Or(name, ".")
	where := filepath.Join(s.dir, "manifests", filepath.FromSlash(name))
	entries, err := readDirN(s.manifests, name, maxOllamaEntries+1)
	if err != nil {
		s.w.warn(where, fmt.Sprintf("cannot read Ollama's manifests: %v", err))
		return
	}
	if len(entries) > maxOllamaEntries {
		s.w.warn(where, fmt.Sprintf("more than %d entries: the rest are not read", maxOllamaEntries))
		entries = entries[:maxOllamaEntries]
	}
	depth := len(rel)
	for _, e := range entries {
		n := e.Name()
		if strings.HasPrefix(n, ".") {
			continue
		}
		file := filepath.Join(where, n)
		sub := path.Join(name, n)
		mode := e.Type()
		if mode&fs.ModeSymlink != 0 {
			st, err := s.manifests.Stat(sub)
			if err != nil {
				s.w.warn(file, fmt.Sprintf("a link that cannot be followed inside Ollama's manifests folder: %v", err))
				continue
			}
			mode = st.Mode().Type()
		}
		switch {
		case depth == 3 && mode.IsDir() && ollamaKinds[rel[2]]:
			// HOST/NAMESPACE/KIND/MODEL: a skill or an agent, not a model
		case !validOllamaPart(depth, n):
			s.w.warn(file, fmt.Sprintf("%q is not a valid Ollama %s name", n, ollamaParts[depth]))
		case depth < 3 && mode.IsDir():
			s.folder(append(slices.Clip(rel), n))
		case depth == 3 && mode.IsRegular():
			s.manifest(rel[0], rel[1], rel[2], n, file)
		default:
			s.w.warn(file, "not where Ollama keeps a manifest (manifests/HOST/NAMESPACE/MODEL/TAG)")
		}
	}
}

// readDirN reads up to n entries of the folder name in root, sorted by name.
func readDirN(root *os.Root, name string, n int) ([]fs.DirEntry, error) {
	f, err := root.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	entries, err := f.ReadDir(n)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	return entries, nil
}

// readSmall reads the regular file name in root, of at most maxOllamaFile bytes. It looks
// before it opens, so that a named pipe cannot hold the walk.
func readSmall(root *os.Root, name string) ([]byte, fs.FileInfo, error) {
	st, err := root.Stat(name)
	if err != nil {
		return nil, nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, st, errors.New("not a regular file")
	}
	if st.Size() > maxOllamaFile {
		return nil, st, fmt.Errorf("%d bytes, over the %d-byte limit", st.Size(), maxOllamaFile)
	}
	f, err := root.Open(name)
	if err != nil {
		return nil, st, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxOllamaFile+1))
	if err != nil {
		return nil, st, err
	}
	if len(b) > maxOllamaFile {
		return nil, st, fmt.Errorf("over the %d-byte limit", maxOllamaFile)
	}
	return b, st, nil
}

// ollamaManifest is what the catalog reads of a manifest.
type ollamaManifest struct {
	SchemaVersion int           `json:"schemaVersion"`
	Config        ollamaLayer   `json:"config"`
	Layers        []ollamaLayer `json:"layers"`
}

type ollamaLayer struct {
	MediaType string `json:"mediaType"`
	Digest    string `json:"digest"`
	Size      int64  `json:"size"`
}

// parseOllamaManifest decodes a manifest and checks every digest in it.
func parseOllamaManifest(b []byte) (*ollamaManifest, error) {
	var m ollamaManifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("the manifest is not valid JSON: %w", err)
	}
	if m.SchemaVersion != 2 {
		return nil, fmt.Errorf("the manifest's schemaVersion is %d, not 2", m.SchemaVersion)
	}
	if len(m.Layers) > maxOllamaLayers {
		return nil, fmt.Errorf("the manifest has %d layers, more than %d", len(m.Layers), maxOllamaLayers)
	}
	if m.Config.Digest != "" {
		if err := checkDigest(m.Config.Digest); err != nil {
			return nil, fmt.Errorf("the manifest's config: %w", err)
		}
	}
	for i, l := range m.Layers {
		if err := checkDigest(l.Digest); err != nil {
			return nil, fmt.Errorf("the manifest's layer %d (%s): %w", i+1, short(l.MediaType), err)
		}
		if l.Size < 0 {
			return nil, fmt.Errorf("the manifest's layer %d (%s) has size %d", i+1, short(l.MediaType), l.Size)
		}
	}
	return &m, nil
}

func checkDigest(d string) error {
	if !digestRe.MatchString(d) {
		return fmt.Errorf("digest %s is not sha256 and 64 hex digits", short(d))
	}
	return nil
}

// short quotes s, cut to 80 bytes, for a warning.
func short(s string) string {
	if len(s) > 80 {
		return strconv.Quote(s[:80]) + "…"
	}
	return strconv.Quote(s)
}

// blobNames are the file names the blob of a checked digest may have: sha256-HEX, and
// sha256:HEX as older stores named it off Windows.
func blobNames(digest string) []string {
	hex := digest[len("sha256:"):]
	if runtime.GOOS == "windows" {
		return []string{"sha256-" + hex}
	}
	return []string{"sha256-" + hex, "sha256:" + hex}
}

// blob finds the blob of layer l (what it is, for messages): its name in blobs/ and its file.
func (s *ollamaStore) blob(l ollamaLayer, what string) (string, fs.FileInfo, error) {
	names := blobNames(l.Digest)
	for _, name := range names {
		st, err := s.blobs.Stat(name)
		if errors.Is(err, fs.ErrNotExist) {
			if lst, err := s.blobs.Lstat(name); err == nil && lst.Mode()&fs.ModeSymlink != 0 {
				return "", nil, fmt.Errorf("%s blob %s is a link to nothing", what, name)
			}
			continue
		}
		if err != nil {
			return "", nil, fmt.Errorf("%s blob %s cannot be read inside Ollama's blobs folder: %w", what, name, err)
		}
		s.w.printBuf = append(s.w.printBuf, strings.Join([]string{"blob", s.blobsDir, name, strconv.FormatInt(st.Size(), 10), strconv.FormatInt(st.ModTime().UnixNano(), 10)}, "\x00"))
		switch {
		case !st.Mode().IsRegular():
			return "", nil, fmt.Errorf("%s blob %s is not a regular file", what, name)
		case l.Size > 0 && st.Size() != l.Size:
			return "", nil, fmt.Errorf("%s blob %s has %d bytes, the manifest says %d (incomplete or damaged)", what, name, st.Size(), l.Size)
		}
		return name, st, nil
	}
	s.w.printBuf = append(s.w.printBuf, "noblob\x00"+s.blobsDir+"\x00"+names[0])
	return "", nil, fmt.Errorf("%s blob %s is missing from %s", what, names[0], s.blobsDir)
}

// small reads the blob of a small layer.
func (s *ollamaStore) small(l ollamaLayer, what string) ([]byte, error) {
	name, _, err := s.blob(l, what)
	if err != nil {
		return nil, err
	}
	b, _, err := readSmall(s.blobs, name)
	if err != nil {
		return nil, fmt.Errorf("%s blob %s: %w", what, name, err)
	}
	return b, nil
}

// manifest reads the manifest HOST/NAMESPACE/MODEL/TAG (at file) and lists its blobs.
func (s *ollamaStore) manifest(host, namespace, model, tag, file string) {
	if s.read++; s.read > maxOllamaManifests {
		if s.read == maxOllamaManifests+1 {
			s.w.warn(filepath.Join(s.dir, "manifests"), fmt.Sprintf("more than %d manifests: the rest are not read", maxOllamaManifests))
		}
		return
	}
	name := ollamaDisplayName(host, namespace, model, tag)
	b, st, err := readSmall(s.manifests, path.Join(host, namespace, model, tag))
	if st != nil {
		s.w.printBuf = append(s.w.printBuf, strings.Join([]string{"manifest", file, strconv.FormatInt(st.Size(), 10), strconv.FormatInt(st.ModTime().UnixNano(), 10)}, "\x00"))
	}
	if err != nil {
		s.w.warn(file, fmt.Sprintf("Ollama model %s: the manifest: %v", name, err))
		return
	}
	m, err := parseOllamaManifest(b)
	if err == nil {
		err = s.list(name, file, m)
	}
	if err != nil && !errors.Is(err, errCloud) {
		s.w.warn(file, fmt.Sprintf("Ollama model %s: %v", name, err))
	}
}

// list lists the blobs of manifest m, named name, at file: its model and projector, with the
// settings of its other layers. Nothing is listed unless every layer it needs is sound.
func (s *ollamaStore) list(name, file string, m *ollamaManifest) error {
	ls, err := s.layersOf(m)
	if err != nil {
		return err
	}
	ref := ollamaRef{OllamaName: OllamaName{Name: name, Manifest: file}}
	mname, mst, err := s.blob(*ls.model, blobModel)
	if err != nil {
		return err
	}
	var pname string
	var pst fs.FileInfo
	if ls.proj != nil {
		if pname, pst, err = s.blob(*ls.proj, blobProjector); err != nil {
			return err
		}
	}
	if err := s.settings(&ref, ls); err != nil {
		return err
	}
	if pname != "" {
		pf := s.found(pname, pst, blobProjector, ref.OllamaName)
		pf.dir = "\x00ollama projector\x00" + pf.real // paired by its manifest, never by folder
		ref.projector = pf.real
		s.w.addFound(pf)
	}
	mf := s.found(mname, mst, blobModel, ref.OllamaName)
	mf.ollama = []ollamaRef{ref}
	s.w.addFound(mf)
	return nil
}

// ollamaLayers are the layers of a manifest Llamatray reads; model is never nil.
type ollamaLayers struct {
	model, proj, params, tmpl, system *ollamaLayer
}

// layersOf sorts the layers of m, refusing a manifest with no GGUF model layer, two of them, or
// an adapter.
func (s *ollamaStore) layersOf(m *ollamaManifest) (ollamaLayers, error) {
	var ls ollamaLayers
	tensors := false
	for i := range m.Layers {
		l := &m.Layers[i]
		switch l.MediaType {
		case mediaModel:
			if ls.model != nil {
				return ls, errors.New("the manifest has two model layers")
			}
			ls.model = l
		case mediaProjector:
			ls.proj = cmp.Or(ls.proj, l)
		case mediaParams:
			ls.params = l
		case mediaTemplate, mediaPrompt:
			ls.tmpl = l
		case mediaSystem:
			ls.system = l
		case mediaAdapter:
			return ls, errors.New("it has a LoRA adapter layer, which Llamatray does not apply, so it is not served")
		case mediaTensor:
			tensors = true
		}
	}
	if ls.model == nil {
		switch {
		case tensors:
			return ls, errors.New("its weights are Ollama tensor layers, not a GGUF file: llama-server cannot run it")
		case s.cloud(m):
			return ls, errCloud
		}
		return ls, fmt.Errorf("the manifest has no model layer (%s)", mediaModel)
	}
	return ls, nil
}

// settings reads into ref the model's parameters, template and system prompt, where it has them.
func (s *ollamaStore) settings(ref *ollamaRef, ls ollamaLayers) error {
	if ls.params != nil {
		b, err := s.small(*ls.params, "params")
		if err != nil {
			return err
		}
		if err := json.Unmarshal(b, &ref.Defaults); err != nil {
			return fmt.Errorf("the params blob is not a JSON object: %w", err)
		}
	}
	for _, t := range []struct {
		l    *ollamaLayer
		what string
		to   *string
	}{{ls.tmpl, "template", &ref.Template}, {ls.system, "system", &ref.System}} {
		if t.l != nil {
			b, err := s.small(*t.l, t.what)
			if err != nil {
				return err
			}
			*t.to = string(b)
		}
	}
	return nil
}

// found is the blob blobName (st) of the model name as a file of the walk, in the given role.
func (s *ollamaStore) found(blobName string, st fs.FileInfo, role string, name OllamaName) found {
	p := filepath.Join(s.blobsDir, blobName)
	return found{path: p, real: realPath(p), size: st.Size(), mtime: st.ModTime(), root: s.root, dir: s.blobsDir,
		blob: role, store: s.dir, ollama: []ollamaRef{{OllamaName: name}}}
}

// cloud reports whether manifest m is of a cloud model: its config names a remote host.
func (s *ollamaStore) cloud(m *ollamaManifest) bool {
	if m.Config.Digest == "" {
		return false
	}
	b, err := s.small(m.Config, "config")
	if err != nil {
		return false
	}
	var c struct {
		RemoteHost string `json:"remote_host"`
	}
	return json.Unmarshal(b, &c) == nil && c.RemoteHost != ""
}
