package locate

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// maxHelp caps what is kept of `--help` output (about 40 KiB for llama-server 0.7.0).
const maxHelp = 1 << 20

// Flags runs `path --help` (bounded by DefaultVersionTimeout) and returns every flag it lists,
// both spellings of each ("-c", "--ctx-size"): what a configuration's extra arguments are checked
// against.
func Flags(ctx context.Context, path string) ([]string, error) {
	runCtx, cancel := context.WithTimeout(ctx, DefaultVersionTimeout)
	defer cancel()
	cmd := exec.CommandContext(runCtx, path, "--help")
	var out capped
	out.limit = maxHelp
	cmd.Stdout = &out
	cmd.Stderr = &out
	cmd.WaitDelay = 2 * time.Second
	hideWindow(cmd)
	runErr := cmd.Run()
	if errors.Is(runCtx.Err(), context.DeadlineExceeded) {
		return nil, fmt.Errorf("%s did not answer --help within %s: %w", path, DefaultVersionTimeout, runCtx.Err())
	}
	flags := ParseFlags(out.String())
	if len(flags) == 0 {
		if runErr != nil {
			return nil, fmt.Errorf("%s --help: %w%s", path, runErr, outputNote(out.String()))
		}
		return nil, fmt.Errorf("%s --help listed no flags", path)
	}
	return flags, nil
}

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
		// The column of spellings ends at the first run of two spaces not followed by another spelling.
		for i := 0; i+2 < len(line); i++ {
			if line[i] == ' ' && line[i+1] == ' ' {
				j := i
				for j < len(line) && line[j] == ' ' {
					j++
				}
				if j < len(line) && line[j] != '-' {
					col = line[:i]
					break
				}
				i = j - 1
			}
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
