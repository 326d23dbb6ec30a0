package wintest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The environment `make test-windows` sets.
const (
	wineEnv  = "LLAMATRAY_WINE"          // the wine wrapper of scripts/fetch-wine.sh; unset: skip
	exeEnv   = "LLAMATRAY_WINDOWS_EXE"   // llamatray.exe of packaging/windows/build-exe.sh
	setupEnv = "LLAMATRAY_WINDOWS_SETUP" // Llamatray-Setup-<version>.exe of build-installer.sh
)

// wine is one private Wine prefix, shared by the tests of this binary (creating one takes
// seconds) and removed when they end.
type wine struct {
	bin    string   // the wine wrapper
	server string   // the wineserver wrapper beside it
	prefix string   // WINEPREFIX, a temporary folder
	env    []string // environment of every Windows process
}

var (
	prefixOnce sync.Once
	shared     *wine
	sharedErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if shared != nil {
		if err := shared.close(); err != nil {
			fmt.Fprintln(os.Stderr, "wintest:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// needWine returns the shared prefix, creating it on first use, or skips the test when
// LLAMATRAY_WINE is unset.
func needWine(t *testing.T) *wine {
	t.Helper()
	bin := os.Getenv(wineEnv)
	if bin == "" {
		t.Skipf("%s is not set: `make test-windows` runs this under Wine", wineEnv)
	}
	prefixOnce.Do(func() { shared, sharedErr = newWine(bin) })
	if sharedErr != nil {
		t.Fatal(sharedErr)
	}
	return shared
}

// needFile returns the file named by the environment variable env, failing the test when it
// is unset or missing (under Wine, the Make target always sets it).
func needFile(t *testing.T, env string) string {
	t.Helper()
	p := os.Getenv(env)
	if p == "" {
		t.Fatalf("%s is not set (`make test-windows` sets it)", env)
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(abs); err != nil {
		t.Fatalf("%s: %v", env, err)
	}
	return abs
}

// newWine creates a prefix in a temporary folder. The processes get no display (Llamatray's
// command line and a silent setup need none), no Mono or Gecko install prompts, and none of
// the variables of this machine that could point Llamatray at its models or servers.
func newWine(bin string) (*wine, error) {
	prefix, err := os.MkdirTemp("", "llamatray-wine-")
	if err != nil {
		return nil, err
	}
	w := &wine{bin: bin, server: filepath.Join(filepath.Dir(bin), "wineserver"), prefix: prefix}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(k, "WINE"), k == "DISPLAY", k == "WAYLAND_DISPLAY",
			strings.HasPrefix(k, "LLAMA"), strings.HasPrefix(k, "FAKE_LLAMA_"), strings.HasPrefix(k, "HF_"):
			continue
		}
		w.env = append(w.env, kv)
	}
	w.env = append(w.env, "WINEPREFIX="+prefix, "WINEDEBUG=-all",
		"WINEDLLOVERRIDES=winemenubuilder.exe=d;mscoree=d;mshtml=d")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	out, err := os.CreateTemp("", "wineboot-*.log")
	if err != nil {
		return w, err
	}
	defer os.Remove(out.Name())
	defer out.Close()
	cmd := w.command(ctx, "wineboot", "-i")
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Run(); err != nil {
		b, _ := os.ReadFile(out.Name())
		return w, fmt.Errorf("wineboot -i in %s: %w\n%s", prefix, err, b)
	}
	fmt.Fprintf(os.Stderr, "wintest: prefix %s ready in %v\n", prefix, time.Since(start).Round(time.Millisecond))
	return w, nil
}

// close ends every process of the prefix and removes it.
func (w *wine) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, w.server, "-k")
	cmd.Env = w.env
	kerr := cmd.Run()
	var ee *exec.ExitError
	if errors.As(kerr, &ee) {
		kerr = nil // no wineserver running
	}
	return errors.Join(kerr, os.RemoveAll(w.prefix))
}

// command is wine running a Windows program (a path or a name Wine finds in system32).
func (w *wine) command(ctx context.Context, program string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, w.bin, append([]string{program}, args...)...)
	cmd.Env = w.env
	cmd.Dir = w.prefix
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// result is what a finished Windows program printed and its exit code.
type result struct {
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return fmt.Sprintf("exit code %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// run runs a Windows program to its end, failing the test when it cannot be started or runs
// past timeout; a non-zero exit code is the caller's to judge.
func (w *wine) run(t *testing.T, timeout time.Duration, program string, args ...string) result {
	t.Helper()
	return w.runIn(t, timeout, "", nil, program, args...)
}

// runIn is run in folder dir (when not empty) with env added to the environment.
func (w *wine) runIn(t *testing.T, timeout time.Duration, dir string, env []string, program string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := w.command(ctx, program, args...)
	if dir != "" {
		cmd.Dir = dir
	}
	cmd.Env = append(cmd.Env, env...)
	stdout, stderr := outputFile(t, "stdout"), outputFile(t, "stderr")
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err := cmd.Run()
	r := result{stdout: readOutput(t, stdout), stderr: readOutput(t, stderr)}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("%s %s ran past %v\n%s", program, strings.Join(args, " "), timeout, r)
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("%s: %v", program, err)
	}
	return r
}

// outputFile is a file for a Windows program's output. Wine processes that outlive the
// program (wineserver, services.exe) inherit its handles, so a pipe would not see its end.
func outputFile(t *testing.T, name string) *os.File {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), name+"-*.txt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// readOutput is what was written to an output file.
func readOutput(t *testing.T, f *os.File) string {
	t.Helper()
	b, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// mustRun is run for a program that must succeed.
func (w *wine) mustRun(t *testing.T, timeout time.Duration, program string, args ...string) result {
	t.Helper()
	r := w.run(t, timeout, program, args...)
	if r.code != 0 {
		t.Fatalf("%s %s: %s", filepath.Base(program), strings.Join(args, " "), r)
	}
	return r
}

// getenv is a variable of the Windows environment, as cmd.exe expands it.
func (w *wine) getenv(t *testing.T, name string) string {
	t.Helper()
	r := w.mustRun(t, time.Minute, "cmd.exe", "/c", "echo", "%"+name+"%")
	v := strings.TrimSpace(r.stdout)
	if v == "" || v == "%"+name+"%" {
		t.Fatalf("%%%s%% is not set under Wine: %s", name, r)
	}
	return v
}

// winPath is a Linux path as Windows programs see it: on drive Z:, Wine's view of /.
func winPath(p string) string {
	return `Z:` + strings.ReplaceAll(p, "/", `\`)
}

// unixPath is the Linux path of a Windows path on drive C: (the prefix's drive_c) or Z: (/).
func (w *wine) unixPath(t *testing.T, p string) string {
	t.Helper()
	if len(p) < 3 || p[1] != ':' || p[2] != '\\' {
		t.Fatalf("%q is not an absolute Windows path", p)
	}
	rest := strings.ReplaceAll(p[3:], `\`, "/")
	switch strings.ToUpper(p[:1]) {
	case "C":
		return filepath.Join(w.prefix, "drive_c", rest)
	case "Z":
		return "/" + rest
	}
	t.Fatalf("%q is on a drive this test does not map", p)
	return ""
}

// process is a process of this prefix, as Linux sees it: Wine runs each Windows process as
// one Linux process whose command line is the Windows one.
type process struct {
	pid     int
	cmdline string
}

// processes lists the running processes of this prefix whose command line contains name
// (case-insensitively), leaving out zombies, which Linux keeps until their parent reaps them.
func (w *wine) processes(t *testing.T, name string) []process {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []process
	mark := []byte("WINEPREFIX=" + w.prefix + "\x00")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		dir := filepath.Join("/proc", e.Name())
		env, err := os.ReadFile(filepath.Join(dir, "environ"))
		if err != nil || !bytes.Contains(env, mark) {
			continue // gone, someone else's, or another prefix
		}
		stat, err := os.ReadFile(filepath.Join(dir, "stat"))
		if err != nil {
			continue
		}
		if i := bytes.LastIndexByte(stat, ')'); i > 0 && len(stat) > i+2 && stat[i+2] == 'Z' {
			continue
		}
		cl, err := os.ReadFile(filepath.Join(dir, "cmdline"))
		if err != nil {
			continue
		}
		line := strings.TrimSpace(strings.ReplaceAll(string(cl), "\x00", " "))
		if strings.Contains(strings.ToLower(line), strings.ToLower(name)) {
			out = append(out, process{pid: pid, cmdline: line})
		}
	}
	return out
}
