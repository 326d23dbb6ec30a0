package locate

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// maxOutput caps what is kept of `--version` output; the version line comes first or close to it.
const maxOutput = 64 << 10

// run runs `path arg`, bounded by timeout, and returns its output (stdout and stderr, where
// llama-server prints its version, at most limit bytes) and how it ended; err is set when ctx ended
// or the run took too long.
func run(ctx context.Context, path, arg string, timeout time.Duration, limit int) (out string, runErr, err error) {
	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(runCtx, path, arg)
	c := &capped{limit: limit}
	cmd.Stdout, cmd.Stderr = c, c
	// A grandchild holding the pipes open must not keep Wait from returning after a kill.
	cmd.WaitDelay = 2 * time.Second
	hideWindow(cmd)
	runErr = cmd.Run()
	if ctx.Err() != nil {
		return "", nil, fmt.Errorf("%s %s: %w", path, arg, ctx.Err())
	}
	if errors.Is(runCtx.Err(), context.DeadlineExceeded) {
		return "", nil, fmt.Errorf("%s did not answer %s within %s: %w", path, arg, timeout, runCtx.Err())
	}
	return c.String(), runErr, nil
}

// Version runs `path --version` (bounded by DefaultVersionTimeout) and returns the text after
// "version:", like "6123 (a1b2c3d)".
func Version(ctx context.Context, path string) (string, error) {
	return runVersion(ctx, path, DefaultVersionTimeout)
}

func runVersion(ctx context.Context, path string, timeout time.Duration) (string, error) {
	text, runErr, err := run(ctx, path, "--version", timeout, maxOutput)
	if err != nil {
		return "", err
	}
	if v, ok := ParseVersion(text); ok {
		return v, nil // some builds exit non-zero after printing it; the version is what counts
	}
	if runErr != nil {
		return "", fmt.Errorf("%s --version: %w%s", path, runErr, outputNote(text))
	}
	return "", fmt.Errorf("%s --version printed no version line%s", path, outputNote(text))
}

// ParseVersion finds llama-server's "version: ..." line in the output of --version and returns
// what follows it. Upstream builds print "version: 6123 (a1b2c3d)"; distribution builds may
// print "version: 0.7.0 (build 11669, commit Debian)". Other lines (backend loading, "built
// with ...") are ignored.
func ParseVersion(output string) (string, bool) {
	for _, line := range strings.Split(output, "\n") {
		line = strings.TrimSpace(line)
		rest, ok := strings.CutPrefix(line, "version:")
		if !ok {
			continue
		}
		if rest = strings.TrimSpace(rest); rest != "" {
			return rest, true
		}
	}
	return "", false
}

var buildWord = regexp.MustCompile(`\bbuild[ =:]*(\d+)`)

// buildNumber extracts llama.cpp's build number from a version text: the leading number of
// "6123 (a1b2c3d)" or "b6123", else the number after "build". 0 when there is none.
func buildNumber(v string) int {
	first, _, _ := strings.Cut(v, " ")
	first = strings.TrimPrefix(first, "b")
	if n, err := strconv.Atoi(first); err == nil && n > 0 {
		return n
	}
	if m := buildWord.FindStringSubmatch(v); m != nil {
		if n, err := strconv.Atoi(m[1]); err == nil {
			return n
		}
	}
	return 0
}

// outputNote quotes the last lines of output for an error message.
func outputNote(text string) string {
	text = strings.TrimSpace(text)
	if text == "" {
		return " (no output)"
	}
	lines := strings.Split(text, "\n")
	if len(lines) > 3 {
		lines = lines[len(lines)-3:]
	}
	return fmt.Sprintf(" (output: %q)", strings.Join(lines, " | "))
}

// capped is a bytes.Buffer that keeps only the first limit (0: maxOutput) bytes written. run gives
// it as both Stdout and Stderr, so exec serialises the writes (it copies from two goroutines only
// when they differ).
type capped struct {
	buf   bytes.Buffer
	limit int // 0: maxOutput
}

func (c *capped) Write(p []byte) (int, error) {
	if room := cmp.Or(c.limit, maxOutput) - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (c *capped) String() string { return c.buf.String() }

// maxHelp caps what is kept of `--help` output (about 40 KiB for llama-server 0.7.0).
const maxHelp = 1 << 20

// Flags runs `path --help` (bounded by DefaultVersionTimeout) and returns every flag it lists,
// both spellings of each ("-c", "--ctx-size"): what a configuration's extra arguments are checked
// against.
func Flags(ctx context.Context, path string) ([]string, error) {
	out, runErr, err := run(ctx, path, "--help", DefaultVersionTimeout, maxHelp)
	if err != nil {
		return nil, err
	}
	flags := ParseFlags(out)
	if len(flags) == 0 {
		if runErr != nil {
			return nil, fmt.Errorf("%s --help: %w%s", path, runErr, outputNote(out))
		}
		return nil, fmt.Errorf("%s --help listed no flags", path)
	}
	return flags, nil
}

// flagsEnd is where the column of a --help line's spellings ends: the first run of two or more spaces
// not followed by another spelling.
var flagsEnd = regexp.MustCompile(` {2,}[^ -]`)

// ParseFlags reads the flags of llama-server's --help: each option line starts with its
// spellings, separated by commas, then its value's placeholder, then two or more spaces and the
// description ("-c,    --ctx-size N                     size of the prompt context").
func ParseFlags(help string) []string {
	var out []string
	for _, line := range strings.Split(help, "\n") {
		line = strings.TrimRight(line, "\r")
		if !strings.HasPrefix(line, "-") || strings.HasPrefix(line, "---") {
			continue
		}
		col := line
		if at := flagsEnd.FindStringIndex(line); at != nil {
			col = line[:at[0]]
		}
		for _, f := range strings.Fields(col) {
			f = strings.TrimSuffix(f, ",")
			if len(f) > 1 && f[0] == '-' && f != "--" {
				out = append(out, f)
			}
		}
	}
	return out
}
