package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// maxFileSize bounds how much of a config file is read.
const maxFileSize = 4 << 20

// Error is one problem in a config file, at a line (0 when unknown) and key (empty for syntax
// errors). Load returns these, joined when there are several.
type Error struct {
	File   string
	Line   int
	Key    string
	Reason string
}

func (e *Error) Error() string {
	s := e.File
	if e.Line > 0 {
		s += ":" + strconv.Itoa(e.Line)
	}
	if e.Key != "" {
		s += fmt.Sprintf(": key %q", e.Key)
	}
	return s + ": " + e.Reason
}

// DefaultFileError says the config file was missing and the commented default file could not be
// written. Load returns it together with a usable Default() configuration.
type DefaultFileError struct {
	Path string
	Err  error
}

func (e *DefaultFileError) Error() string {
	return fmt.Sprintf("config: %s is missing and the default file could not be written: %v", e.Path, e.Err)
}

func (e *DefaultFileError) Unwrap() error { return e.Err }

// Load reads the config file at path ("" = Path()). A missing file yields Default() and writes
// the commented default file there; if that write fails, the defaults come back together with a
// *DefaultFileError. An unknown key, a bad value or a syntax error yields a zero Config and an
// error per problem, "FILE:LINE: key \"x\": reason" (joined; each an *Error). The result is
// never partly configured.
func Load(path string) (Config, error) {
	if path == "" {
		p, err := Path()
		if err != nil {
			return Config{}, err
		}
		path = p
	}
	data, err := readLimited(path)
	if errors.Is(err, fs.ErrNotExist) {
		c := Default()
		if werr := writeFileAtomic(path, []byte(DefaultFileText())); werr != nil {
			return c, &DefaultFileError{Path: path, Err: werr}
		}
		return c, nil
	}
	if err != nil {
		return Config{}, fmt.Errorf("config: read %s: %w", path, err)
	}
	return Parse(path, data)
}

func readLimited(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return nil, fmt.Errorf("%s is a directory", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxFileSize {
		return nil, fmt.Errorf("file is larger than %d MiB", maxFileSize>>20)
	}
	return data, nil
}

// Parse decodes config text (name is used in error messages) over Default() and validates it,
// with the same results as Load.
func Parse(name string, data []byte) (Config, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	c := Default()
	dec := toml.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	err := dec.Decode(&c)
	idx := indexKeys(data) // stops at a syntax error, which Decode reports
	if errs := idx.valueKinds(name); len(errs) > 0 && !positioned(err) {
		return Config{}, errors.Join(errs...)
	}
	if err != nil {
		return Config{}, decodeErrors(name, err)
	}
	c.normalize()
	if err := c.Validate(); err != nil {
		return Config{}, locate(name, idx, err)
	}
	return c, nil
}

// normalize makes empty lists and tables nil, so a file round-trips to the same value.
func (c *Config) normalize() {
	nilIfEmpty(&c.ModelDirs, &c.APIKeys, &c.AllowedHosts, &c.CORSOrigins, &c.Defaults.Args)
	if len(c.Models) == 0 {
		c.Models = nil
	}
	for id, m := range c.Models {
		c.Models[id] = m.normalized()
	}
}

// normalized is m with its empty lists and tables nil, its variants' too.
func (m Model) normalized() Model {
	nilIfEmpty(&m.Aliases, &m.Tags, &m.Args)
	if len(m.Variants) == 0 {
		m.Variants = nil
	}
	for name, v := range m.Variants {
		m.Variants[name] = v.normalized()
	}
	return m
}

func nilIfEmpty(lists ...*[]string) {
	for _, s := range lists {
		if len(*s) == 0 {
			*s = nil
		}
	}
}

// positioned reports whether err carries a line number.
func positioned(err error) bool {
	var strict *toml.StrictMissingError
	var de *toml.DecodeError
	return errors.As(err, &strict) || errors.As(err, &de)
}

// decodeErrors turns go-toml errors into *Error values with line numbers.
func decodeErrors(name string, err error) error {
	var strict *toml.StrictMissingError
	if errors.As(err, &strict) {
		errs := make([]error, 0, len(strict.Errors))
		for i := range strict.Errors {
			de := &strict.Errors[i]
			row, _ := de.Position()
			key := []string(de.Key())
			reason := "unknown key"
			if s := suggestKey(key); s != "" {
				reason += fmt.Sprintf("; did you mean %q?", s)
			}
			errs = append(errs, &Error{File: name, Line: row, Key: joinKey(key), Reason: reason})
		}
		return errors.Join(errs...)
	}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		row, _ := de.Position()
		return &Error{File: name, Line: row, Key: joinKey(de.Key()), Reason: friendlyReason(strings.TrimPrefix(de.Error(), "toml: "))}
	}
	return &Error{File: name, Reason: err.Error()}
}

// friendlyReason rewrites go-toml's type mismatch wording in terms of the file.
func friendlyReason(msg string) string {
	const pre = "cannot decode TOML "
	if !strings.HasPrefix(msg, pre) {
		return msg
	}
	got, want, ok := strings.Cut(strings.TrimPrefix(msg, pre), " into ")
	if !ok {
		return msg
	}
	if _, t, ok := strings.Cut(want, " of type "); ok {
		want = t
	}
	switch {
	case strings.HasSuffix(want, "config.Size"):
		want = "a size like \"6GiB\""
	case strings.HasSuffix(want, "config.Duration"):
		want = "a duration like \"5m\""
	case want == "string":
		want = "a quoted string"
	case want == "[]string":
		want = "a list of strings like [\"a\", \"b\"]"
	case want == "bool":
		want = "true or false"
	case strings.HasPrefix(want, "int") || want == "*int":
		want = "a whole number"
	default:
		want = "a table"
	}
	article := "a"
	if strings.IndexByte("aeiou", got[0]) >= 0 {
		article = "an"
	}
	return fmt.Sprintf("expected %s, found %s %s", want, article, got)
}

func joinKey(k []string) string { return strings.Join(k, ".") }

// locate adds file and line to validation errors.
func locate(name string, idx keyIndex, err error) error {
	var out []error
	for _, e := range flatten(err) {
		var fe *FieldError
		if errors.As(e, &fe) {
			out = append(out, &Error{File: name, Line: idx.line(fe.Key), Key: joinKey(fe.Key), Reason: fe.Reason})
			continue
		}
		out = append(out, &Error{File: name, Reason: e.Error()})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].(*Error).Line < out[j].(*Error).Line })
	return errors.Join(out...)
}

func flatten(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
