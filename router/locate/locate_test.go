package locate

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// sandboxEnv is the real environment confined to root: files outside it do not exist, PATH is
// empty and the program runs from root/app/llamatray. Candidates found are real files, run
// for real.
func sandboxEnv(root string, env map[string]string) Env {
	e := OSEnv()
	e.HomeDir = filepath.Join(root, "home")
	e.Getenv = func(k string) string { return env[k] }
	e.Executable = func() (string, error) { return filepath.Join(root, "app", "llamatray"), nil }
	e.LookPath = func(string) (string, error) { return "", errors.New("empty PATH") }
	e.Stat = func(p string) (fs.FileInfo, error) {
		if rel, err := filepath.Rel(root, p); err != nil || strings.HasPrefix(rel, "..") {
			return nil, &fs.PathError{Op: "stat", Path: p, Err: fs.ErrNotExist}
		}
		return os.Stat(p)
	}
	return e
}

const brokenLlamaServer = "echo 'error while loading shared libraries: libggml.so.0' >&2\nexit 127\n"

func TestFindSkipsBrokenInstalls(t *testing.T) {
	root := t.TempDir()
	bundled := writeScript(t, filepath.Join(root, "app", "llama-server"), brokenLlamaServer)
	user := writeScript(t, filepath.Join(root, "home", ".local", "bin", "llama-server"), fakeLlamaServer)

	r, err := FindWith(context.Background(), sandboxEnv(root, nil), "")
	if err != nil {
		t.Fatalf("FindWith: %v", err)
	}
	want := Result{Path: user, Source: SourceUser, Version: "1234 (abcdef)", Build: 1234}
	if r != want {
		t.Fatalf("FindWith = %+v, want %+v", r, want)
	}

	// With the working one gone, the error names the broken one and why.
	if err := os.Remove(user); err != nil {
		t.Fatal(err)
	}
	_, err = FindWith(context.Background(), sandboxEnv(root, nil), "")
	var nf *NotFoundError
	if !errors.As(err, &nf) || !errors.Is(err, ErrNotFound) {
		t.Fatalf("error = %v (%T), want a *NotFoundError", err, err)
	}
	if len(nf.Broken) != 1 || !strings.Contains(err.Error(), bundled) || !strings.Contains(err.Error(), "libggml.so.0") {
		t.Errorf("error %q should name %s and its failure", err, bundled)
	}
}

func TestFindNothingInstalled(t *testing.T) {
	_, err := FindWith(context.Background(), sandboxEnv(t.TempDir(), nil), "")
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("error = %v, want ErrNotFound", err)
	}
	if !strings.Contains(err.Error(), "llama-server not found (looked in ") || !strings.Contains(err.Error(), "PATH") {
		t.Errorf("error %q should list the places searched", err)
	}
}

func TestFindConfigured(t *testing.T) {
	root := t.TempDir()
	writeScript(t, filepath.Join(root, "app", "llama-server"), fakeLlamaServer)
	broken := writeScript(t, filepath.Join(root, "opt", "llama-server"), brokenLlamaServer)
	good := writeScript(t, filepath.Join(root, "srv", "llama-server"), strings.Replace(fakeLlamaServer, "1234 (abcdef)", "8000 (feedbee)", 1))
	e := sandboxEnv(root, map[string]string{"LLAMA_SERVER": broken})

	// The configured path wins over $LLAMA_SERVER and over the bundled one.
	r, err := FindWith(context.Background(), e, good)
	if err != nil || r.Path != good || r.Source != SourceConfig || r.Version != "8000 (feedbee)" || r.Build != 8000 {
		t.Fatalf("FindWith(configured) = %+v, %v", r, err)
	}

	// A configured path that does not run is an error naming it, even with a working one bundled.
	_, err = FindWith(context.Background(), e, broken)
	var ce *ChosenError
	if !errors.As(err, &ce) || ce.Path != broken || !strings.Contains(err.Error(), "did not run") || !strings.Contains(err.Error(), "libggml.so.0") {
		t.Fatalf("error = %v, want a *ChosenError for %s", err, broken)
	}

	// So is $LLAMA_SERVER when nothing is configured.
	_, err = FindWith(context.Background(), e, "")
	if !errors.As(err, &ce) || ce.Source != SourceEnv || ce.Path != broken {
		t.Fatalf("error = %v, want a *ChosenError from $LLAMA_SERVER", err)
	}

	// A configured path that does not exist is an error naming it, not skipped.
	missing := filepath.Join(root, "nowhere", "llama-server")
	_, err = FindWith(context.Background(), e, missing)
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), missing) {
		t.Fatalf("error = %v, want one naming %s", err, missing)
	}
}

func TestFindRealEnvironment(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the stand-in llama-server is a shell script")
	}
	path := writeScript(t, filepath.Join(t.TempDir(), "llama-server"), fakeLlamaServer)
	r, err := Find(context.Background(), path)
	if err != nil || r.Path != path || r.Source != SourceConfig || r.Version != "1234 (abcdef)" {
		t.Fatalf("Find = %+v, %v", r, err)
	}

	// Through $LLAMA_SERVER too.
	t.Setenv("LLAMA_SERVER", path)
	if r, err := Find(context.Background(), ""); err != nil || r.Source != SourceEnv || r.Path != path {
		t.Fatalf("Find with $LLAMA_SERVER = %+v, %v", r, err)
	}

	// And through PATH, which comes before the usual install folders.
	t.Setenv("LLAMA_SERVER", "")
	t.Setenv("PATH", filepath.Dir(path))
	if r, err := Find(context.Background(), ""); err != nil || r.Source != SourcePath || r.Path != path {
		t.Fatalf("Find through PATH = %+v, %v", r, err)
	}
}

// TestFindRealLlamaServer checks the real binary when one is given (make e2e sets LLAMA_SERVER).
func TestFindRealLlamaServer(t *testing.T) {
	path := os.Getenv("LLAMA_SERVER")
	if path == "" {
		t.Skip("LLAMA_SERVER is not set")
	}
	r, err := Find(context.Background(), path)
	if err != nil {
		t.Fatalf("Find(%s): %v", path, err)
	}
	if r.Version == "" || r.Build == 0 {
		t.Errorf("Find(%s) = %+v, want a version with a build number", path, r)
	}
	t.Logf("%s: version %q, build %d", r.Path, r.Version, r.Build)
}
