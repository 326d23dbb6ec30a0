package child

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/testbed"
)

// TestChildDiesWithKilledParent re-executes the test binary as a parent that
// starts a child, SIGKILLs that parent and waits for the child to be gone.
// While loading, the fake does not read stdin yet, so only Pdeathsig can end
// it; once ready, both Pdeathsig and the stdin orphan guard apply.
func TestChildDiesWithKilledParent(t *testing.T) {
	for _, when := range []string{"loading", "ready"} {
		t.Run(when, func(t *testing.T) {
			model := filepath.Join(t.TempDir(), "model.gguf")
			if err := os.WriteFile(model, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			load := "10ms"
			if when == "loading" {
				load = "10m"
			}
			// The killed parent cannot remove its socket folder: keep it in one of the test's own.
			runtimeDir, err := os.MkdirTemp("", "rt")
			if err != nil {
				t.Fatal(err)
			}
			defer os.RemoveAll(runtimeDir)
			helper := exec.Command(os.Args[0], "-test.run=^$")
			helper.Env = append(os.Environ(),
				"XDG_RUNTIME_DIR="+runtimeDir,
				helperEnv+"="+when,
				helperBinEnv+"="+testbed.FakeLlamaServer(t),
				helperModelEnv+"="+model,
				"FAKE_LLAMA_LOAD_TIME="+load,
			)
			var stderr bytes.Buffer
			helper.Stderr = &stderr
			out, err := helper.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := helper.Start(); err != nil {
				t.Fatal(err)
			}
			waited := false
			defer func() {
				if !waited {
					helper.Process.Kill()
					helper.Wait()
				}
			}()

			lines := make(chan string, 1)
			go func() {
				l, _ := bufio.NewReader(out).ReadString('\n')
				lines <- l
			}()
			var line string
			select {
			case line = <-lines:
			case <-time.After(30 * time.Second):
				t.Fatal("helper printed no pid within 30s")
			}
			pid, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "pid ")))
			if err != nil {
				helper.Process.Kill()
				helper.Wait()
				waited = true
				t.Fatalf("helper said %q: %v; stderr: %s", line, err, stderr.String())
			}
			t.Cleanup(func() {
				if !gone(pid) {
					syscall.Kill(pid, syscall.SIGKILL)
				}
			})
			cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			if err != nil || gone(pid) || !bytes.Contains(cmdline, []byte("llama-server")) {
				t.Fatalf("child %d not running before the kill (cmdline %q, err %v)", pid, cmdline, err)
			}

			if err := helper.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			helper.Wait()
			waited = true
			testbed.WaitFor(t, 10*time.Second, fmt.Sprintf("child %d to die with its parent", pid), func() bool { return gone(pid) })
		})
	}
}

// gone reports whether pid no longer runs; a zombie counts as gone.
func gone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(b, ')') // the command name may contain spaces and parentheses
	if i < 0 || i+2 >= len(b) {
		return true
	}
	state := b[i+2]
	return state == 'Z' || state == 'X'
}
