package wintest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestConsole types commands in cmd.exe running in a terminal (script(1) gives it one, so it has a
// console of its own, as in a cmd.exe window). llamatray.exe is a GUI-subsystem program, which
// Windows starts with no console: its commands must attach to cmd.exe's to print there (router/cli,
// console_windows.go), and a redirection must still reach its file rather than the console.
func TestConsole(t *testing.T) {
	w := needWine(t)
	exe := needFile(t, exeEnv)
	scriptBin, err := exec.LookPath("script")
	if err != nil {
		t.Skip("script (util-linux), which gives cmd.exe a terminal, is not installed")
	}
	win := func(p string) string { return `Z:` + strings.ReplaceAll(p, "/", `\`) }
	redirected := filepath.Join(t.TempDir(), "version.txt")
	// Unquoted paths: cmd.exe's own quoting rules would be in the test otherwise (the paths of the
	// Make target and of TempDir have no spaces).
	for _, p := range []string{exe, redirected} {
		if strings.ContainsAny(p, " &'\"") {
			t.Skipf("%q needs quoting in cmd.exe", p)
		}
	}
	e := win(exe)
	line := fmt.Sprintf(`%s cmd /c '%s version & %s models & %s version > %s & %s frobnicate & echo cmd-done'`,
		w.bin, e, e, e, win(redirected), e)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, scriptBin, "-qec", line, "/dev/null")
	cmd.Env = append(append([]string{}, w.env...), "TERM=xterm")
	cmd.Dir = w.prefix
	cmd.WaitDelay = 5 * time.Second
	out := outputFile(t, "console")
	cmd.Stdout, cmd.Stderr = out, out
	err = cmd.Run()
	var ee *exec.ExitError
	if ctx.Err() != nil || (err != nil && !errors.As(err, &ee)) {
		t.Fatalf("cmd.exe in a terminal: %v (%v)\n%s", err, ctx.Err(), readOutput(t, out))
	}
	screen := plain(readOutput(t, out))
	t.Logf("the console shows:\n%s", screen)

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

var (
	cursorRight = regexp.MustCompile(`\x1b\[(\d+)C`)
	escape      = regexp.MustCompile(`\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\a]*\a|\r`)
)

// plain is a terminal's output without its escape sequences (Wine's console moves the cursor
// over blanks rather than writing them).
func plain(s string) string {
	s = cursorRight.ReplaceAllStringFunc(s, func(m string) string {
		var n int
		fmt.Sscanf(m, "\x1b[%dC", &n)
		return strings.Repeat(" ", min(n, 200))
	})
	return escape.ReplaceAllString(s, "")
}
