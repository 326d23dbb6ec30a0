package harness

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/llamatray/llamatray/router/locate"
)

// Machine describes where a measurement ran.
type Machine struct {
	CPU          string // model name from /proc/cpuinfo
	Cores        int
	RAM          int64 // bytes, MemTotal
	GoVersion    string
	LlamaVersion string
	OS           string
	Date         time.Time
}

// Describe reads the machine's CPU, cores and RAM, and asks llamaServer for its version.
func Describe(ctx context.Context, llamaServer string) Machine {
	m := Machine{
		CPU:       cpuModel(),
		Cores:     runtime.NumCPU(),
		RAM:       memTotal(),
		GoVersion: runtime.Version(),
		OS:        runtime.GOOS + "/" + runtime.GOARCH,
		Date:      time.Now(),
	}
	if v, err := locate.Version(ctx, llamaServer); err == nil {
		m.LlamaVersion = v
	} else {
		m.LlamaVersion = "unknown (" + err.Error() + ")"
	}
	return m
}

// String is a one-paragraph description.
func (m Machine) String() string {
	return fmt.Sprintf("%s, %d cores, %.1f GiB RAM, %s, %s, llama-server %s, %s",
		m.CPU, m.Cores, float64(m.RAM)/(1<<30), m.OS, m.GoVersion, m.LlamaVersion, m.Date.Format("2006-01-02 15:04 MST"))
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}

func memTotal() int64 {
	v, _ := procStatusField("/proc/meminfo", "MemTotal")
	return v
}

// LoadAvg is the 1, 5 and 15 minute load average from /proc/loadavg ("?" where unavailable).
func LoadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// SelfRSS is this process's resident set (VmRSS) in bytes.
func SelfRSS() (int64, error) {
	return procStatusField("/proc/self/status", "VmRSS")
}

// RSS is the resident set (VmRSS) of process pid in bytes.
func RSS(pid int) (int64, error) {
	return procStatusField(fmt.Sprintf("/proc/%d/status", pid), "VmRSS")
}

// procStatusField reads a "Key:   123 kB" line of a /proc file, in bytes.
func procStatusField(path, key string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || k != key {
			continue
		}
		fields := strings.Fields(v)
		if len(fields) == 0 {
			break
		}
		n, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s %s: %w", path, key, err)
		}
		if len(fields) > 1 && fields[1] == "kB" {
			n <<= 10
		}
		return n, nil
	}
	return 0, fmt.Errorf("%s: no %s line", path, key)
}
