package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ProcState is what /proc says of a process: "" when it is gone, else its state letter
// (R, S, D, Z, ...).
func ProcState(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	_, state, _ := parseStat(string(b))
	return state
}

// Gone reports a process that no longer runs: absent, or a zombie waiting to be reaped.
func Gone(pid int) bool {
	s := ProcState(pid)
	return s == "" || s == "Z" || s == "X"
}

// ChildrenOf lists the live (not zombie) processes whose parent is ppid.
func ChildrenOf(ppid int) []int {
	dirs, _ := filepath.Glob("/proc/[0-9]*/stat")
	var out []int
	for _, d := range dirs {
		b, err := os.ReadFile(d)
		if err != nil {
			continue
		}
		parent, state, ok := parseStat(string(b))
		if !ok || parent != ppid || state == "Z" || state == "X" {
			continue
		}
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(d)))
		if err == nil {
			out = append(out, pid)
		}
	}
	return out
}

// parseStat reads the parent PID and state of a /proc/PID/stat line; the command name in
// parentheses may itself hold spaces and parentheses.
func parseStat(s string) (ppid int, state string, ok bool) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, "", false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0, "", false
	}
	p, err := strconv.Atoi(f[1])
	if err != nil {
		return 0, "", false
	}
	return p, f[0], true
}
