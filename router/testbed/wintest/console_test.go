package wintest

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/testbed"
)

// TestConsole types commands in cmd.exe running in a terminal (script(1) gives it one, so it has a
// console of its own, as in a cmd.exe window). llamatray.exe is a GUI-subsystem program, which
// Windows starts with no console: its commands must attach to cmd.exe's to print there (router/cli,
// console_windows.go), and a redirection must still reach its file rather than the console.
func TestConsole(t *testing.T) {
	w := needWine(t)
	exe := needFile(t, exeEnv)
	redirected := filepath.Join(t.TempDir(), "version.txt")
	e := plainPath(t, exe)
	term := startTerminal(t, w, fmt.Sprintf(`%s version & %s models & %s version > %s & %s frobnicate & echo cmd-done`,
		e, e, e, plainPath(t, redirected), e))
	term.wait(t, 3*time.Minute)
	screen := term.flat(t)
	t.Logf("the console shows:\n%s", term.screen(t))
	for _, want := range []string{
		"llamatray ",                   // version
		"EST. MEMORY",                  // the header of models' table
		"no GGUF models found in",      // models' stderr
		`unknown command "frobnicate"`, // an error, on stderr
		"cmd-done",
	} {
		if !strings.Contains(screen, want) {
			t.Errorf("the console lacks %q", want)
		}
	}
	if n := strings.Count(screen, "(commit "); n != 1 {
		t.Errorf("the version line shows %d times on the console, want 1 (the other is redirected)", n)
	}
	b, err := os.ReadFile(redirected)
	if err != nil || !strings.Contains(string(b), "(commit ") {
		t.Errorf("the redirected version: %q, %v", b, err)
	}
}

// TestConsoleServeCtrlC: `llamatray serve` typed in the console logs there, and Ctrl-C typed in
// it stops the router, as on a terminal.
func TestConsoleServeCtrlC(t *testing.T) {
	w := needWine(t)
	exe := needFile(t, exeEnv)
	addr := fmt.Sprintf("127.0.0.1:%d", testbed.FreePort(t))
	// "& echo": cmd.exe waits for a GUI program that a line of several commands runs.
	term := startTerminal(t, w, fmt.Sprintf(`%s serve --addr %s --models-dir %s & echo cmd-done`, plainPath(t, exe), addr, plainPath(t, t.TempDir())))
	// Polled with a deadline: the screen is an external process's output.
	deadline := time.Now().Add(2 * time.Minute)
	for !strings.Contains(term.flat(t), `msg="llamatray ready"`) {
		if time.Now().After(deadline) || term.exited() {
			t.Fatalf("serve did not log that it is ready on the console:\n%s", term.screen(t))
		}
		time.Sleep(200 * time.Millisecond)
	}
	if _, err := io.WriteString(term.keys, "\x03"); err != nil { // Ctrl-C
		t.Fatal(err)
	}
	term.wait(t, time.Minute)
	// serve ends: it does not outlive the Ctrl-C (a program that had not attached to the console
	// would go on serving). Polled with a deadline: serve is an external process. Its last words
	// ("shutting down") reach the screen only when it is faster than cmd.exe, which gets the Ctrl-C
	// too and ends, closing the terminal.
	deadline = time.Now().Add(time.Minute)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			break
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatalf("%s still answers a minute after Ctrl-C", addr)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !strings.Contains(term.flat(t), `msg="shutting down"`) {
		t.Log(`serve's "shutting down" did not reach the screen before cmd.exe closed it`)
	}
}

// terminal is cmd.exe running a command line in a terminal of its own.
type terminal struct {
	cmd    *exec.Cmd
	output *os.File       // what the terminal shows, escape sequences and all
	keys   io.WriteCloser // what is typed in it
	done   chan error
}

// startTerminal runs `cmd /c LINE` under script(1); the test is skipped when script is missing.
func startTerminal(t *testing.T, w *wine, line string) *terminal {
	t.Helper()
	scriptBin, err := exec.LookPath("script")
	if err != nil {
		t.Skip("script (util-linux), which gives cmd.exe a terminal, is not installed")
	}
	cmd := exec.Command(scriptBin, "-qec", fmt.Sprintf(`%s cmd /c '%s'`, w.bin, line), "/dev/null")
	cmd.Env = append(append([]string{}, w.env...), "TERM=xterm")
	cmd.Dir = w.prefix
	cmd.WaitDelay = 5 * time.Second
	term := &terminal{cmd: cmd, output: outputFile(t, "terminal"), done: make(chan error, 1)}
	cmd.Stdout, cmd.Stderr = term.output, term.output
	if term.keys, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { term.done <- cmd.Wait() }()
	t.Cleanup(func() {
		term.keys.Close()
		if !term.exited() {
			_ = cmd.Process.Kill()
			<-term.done
		}
		if t.Failed() {
			t.Logf("the terminal shows:\n%s", term.screen(t))
		}
	})
	return term
}

// exited reports whether script has ended.
func (term *terminal) exited() bool {
	select {
	case err := <-term.done:
		term.done <- err
		return true
	default:
		return false
	}
}

// wait waits for the command line to end, failing the test past timeout. What is typed stays open
// (script(1) hangs up its terminal at the end of its input).
func (term *terminal) wait(t *testing.T, timeout time.Duration) {
	t.Helper()
	select {
	case err := <-term.done:
		term.done <- err
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatalf("cmd.exe in a terminal: %v", err)
		}
	case <-time.After(timeout):
		t.Fatalf("cmd.exe in a terminal ran past %v:\n%s", timeout, term.screen(t))
	}
}

// screen is what the terminal shows, without its escape sequences (Wine's console moves the
// cursor over blanks rather than writing them).
func (term *terminal) screen(t *testing.T) string {
	s := cursorRight.ReplaceAllStringFunc(readOutput(t, term.output), func(m string) string {
		var n int
		fmt.Sscanf(m, "\x1b[%dC", &n)
		return strings.Repeat(" ", min(n, 200))
	})
	return escape.ReplaceAllString(s, "")
}

// flat is screen with its lines joined: the console wraps long lines at its width.
func (term *terminal) flat(t *testing.T) string {
	return strings.ReplaceAll(term.screen(t), "\n", "")
}

var (
	cursorRight = regexp.MustCompile(`\x1b\[(\d+)C`)
	escape      = regexp.MustCompile(`\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\a]*\a|\r`)
)

// plainPath is p as cmd.exe sees it, unquoted: the test is skipped when p would need quoting (the
// paths of the Make target and of TempDir need none), which would put cmd.exe's own quoting rules
// in the test.
func plainPath(t *testing.T, p string) string {
	t.Helper()
	if strings.ContainsAny(p, " &'\"^%()<>|") {
		t.Skipf("%q needs quoting in cmd.exe", p)
	}
	return winPath(p)
}
