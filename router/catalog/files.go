package catalog

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
)

// shardRe matches the name of one file of a split model, as gguf-split writes it, in any case:
// prefix, shard number, "-of-", shard count, extension.
var shardRe = regexp.MustCompile(`(?i)^(.*)-(\d{5})(-of-)(\d{5})(\.gguf)$`)

// Shard is the name of one file of a split model, "name-00002-of-00003.gguf".
type Shard struct {
	Prefix string // "name"
	N      int    // this file's number, from 1
	Total  int    // how many files the model has
	of     string // "-of-" as written
	count  string // Total as written
	ext    string // ".gguf" as written
}

// ParseShard reads a file name (no folder) as a shard of a split model; ok is false for any other name.
func ParseShard(name string) (s Shard, ok bool) {
	m := shardRe.FindStringSubmatch(name)
	if m == nil {
		return Shard{}, false
	}
	n, _ := strconv.Atoi(m[2])
	total, _ := strconv.Atoi(m[4])
	return Shard{Prefix: m[1], N: n, Total: total, of: m[3], count: m[4], ext: m[5]}, true
}

// Name is the file name of shard n of the same model, written as this one is.
func (s Shard) Name(n int) string {
	return fmt.Sprintf("%s-%05d%s%s%s", s.Prefix, n, s.of, s.count, s.ext)
}

// ShardPaths lists the paths of every file of the split model that path is a shard of, in order,
// whether they exist or not; for a file that is not a shard it is just path.
func ShardPaths(path string) []string {
	s, ok := ParseShard(filepath.Base(path))
	if !ok {
		return []string{path}
	}
	out := make([]string, 0, s.Total)
	for i := 1; i <= s.Total; i++ {
		out = append(out, filepath.Join(filepath.Dir(path), s.Name(i)))
	}
	return out
}

// CheckGGUF says why the file at path is not a GGUF model, from its first bytes (the magic); nil
// when it is one. The catalog's scan reads the whole header; this is the quick check for a file
// a user picks.
func CheckGGUF(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return CheckGGUFStart(f, filepath.Base(path))
}

// CheckGGUFStart is CheckGGUF of a file already open (name is for the message): r is its start.
func CheckGGUFStart(r io.Reader, name string) error {
	var magic [4]byte
	if _, err := io.ReadFull(r, magic[:]); err != nil {
		return fmt.Errorf("%s is not a GGUF model: too short", name)
	}
	if err := checkMagic(magic); err != nil {
		return fmt.Errorf("%s is not a GGUF model: %w", name, err)
	}
	return nil
}

// checkMagic accepts the GGUF magic and names the old GGML formats.
func checkMagic(magic [4]byte) error {
	switch string(magic[:]) {
	case "GGUF":
		return nil
	case "lmgg", "fmgg", "tjgg", "GGML", "GGMF", "GGJT":
		return errors.New("old GGML format (convert it to GGUF)")
	}
	return fmt.Errorf("not a GGUF file (magic %q)", magic[:])
}
