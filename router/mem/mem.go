// Package mem measures memory: the system's RAM, a process's resident set, and NVIDIA VRAM through
// NVML (the driver's library, loaded at run time) or else nvidia-smi when it is installed.
package mem

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	gmem "github.com/shirou/gopsutil/v4/mem"
	"github.com/shirou/gopsutil/v4/process"

	"github.com/llamatray/llamatray/router/envconfig"
)

// GPU is one GPU's memory.
type GPU struct {
	Name   string // what the driver calls it, e.g. "NVIDIA GeForce RTX 4090"
	Device string // llama-server's name for it (CUDA0, Vulkan0, MTL0), as its buffer report prints it; "" when unknown
	Total  int64  // what the device may hold: its memory, or on Apple silicon the Metal working-set limit
	Free   int64
}

// System is a sample of the machine's memory.
type System struct {
	Total     int64 // RAM
	Available int64 // RAM the kernel can hand out without swapping
	GPUs      []GPU
	Unified   bool // GPU memory is system RAM (Apple silicon)
}

// Probe measures memory. The engine takes one so tests can inject pressure.
type Probe interface {
	System(ctx context.Context) (System, error)
	ProcessRSS(ctx context.Context, pid int) (int64, error)
	// ProcessVRAM maps pid → VRAM bytes in use; empty without an NVIDIA GPU.
	ProcessVRAM(ctx context.Context) (map[int]int64, error)
}

// Machine is the real machine's probe; with LLAMATRAY_SIM_MACHINE set (envconfig.SimMachine), the simulated
// machine it describes.
func Machine() Probe {
	if path := envconfig.SimMachine.Get(); path != "" {
		return Sim(path)
	}
	return machine{smi: findSMI(), nv: loadNVML()}
}

// nvmlLoaded keeps each NVML library loaded and initialised once per process, by path: its
// *nvmlLib, nil when it did not start.
var nvmlLoaded sync.Map

// loadNVML loads and initialises NVML (envconfig.NVMLLib, else the driver's); nil when it is not there or
// fails to start (no NVIDIA driver), and then nvidia-smi is asked instead.
func loadNVML() *nvmlLib {
	path := cmp.Or(envconfig.NVMLLib.Get(), nvmlDefault)
	if path == "" {
		return nil
	}
	if n, ok := nvmlLoaded.Load(path); ok {
		return n.(*nvmlLib)
	}
	// Under no lock: it loads a library and starts the driver's side; nil when it fails.
	n, _ := openNVML(path)
	if first, loaded := nvmlLoaded.LoadOrStore(path, n); loaded { // another probe loaded it meanwhile
		n.close()
		return first.(*nvmlLib)
	}
	return n
}

// machine measures this machine. nv is NVML when it loaded; smi is nvidia-smi's path, else "".
type machine struct {
	smi string
	nv  *nvmlLib
}

func findSMI() string {
	p, err := exec.LookPath("nvidia-smi")
	if err != nil {
		return ""
	}
	return p
}

func (m machine) System(ctx context.Context) (System, error) {
	vm, err := gmem.VirtualMemoryWithContext(ctx)
	if err != nil {
		return System{}, fmt.Errorf("reading system memory: %w", err)
	}
	s := System{Total: int64(vm.Total), Available: int64(vm.Available), Unified: unifiedMemory}
	s.GPUs = unifiedGPUs(s.Total)
	if gpus, err := m.nvidia(ctx); err == nil {
		s.GPUs = gpus
	}
	if len(s.GPUs) == 0 && runtime.GOOS == "linux" {
		s.GPUs = AMDGPUs("/sys/class/drm")
	}
	return s, nil
}

func (m machine) ProcessRSS(ctx context.Context, pid int) (int64, error) {
	p, err := process.NewProcessWithContext(ctx, int32(pid))
	if err != nil {
		return 0, fmt.Errorf("process %d: %w", pid, err)
	}
	mi, err := p.MemoryInfoWithContext(ctx)
	if err != nil {
		return 0, fmt.Errorf("process %d memory: %w", pid, err)
	}
	return int64(mi.RSS), nil
}

func (m machine) ProcessVRAM(ctx context.Context) (map[int]int64, error) {
	out := map[int]int64{}
	if m.smi == "" {
		return out, nil
	}
	b, err := m.run(ctx, "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits")
	if err != nil {
		return out, err
	}
	return ParseComputeApps(b), nil
}

// nvidia reads the NVIDIA GPUs: through NVML, else nvidia-smi, else an error (none of them here).
func (m machine) nvidia(ctx context.Context) ([]GPU, error) {
	if m.nv != nil {
		if gpus, err := m.nv.gpus(); err == nil {
			return gpus, nil
		}
	}
	if m.smi == "" {
		return nil, errors.New("no NVML and no nvidia-smi")
	}
	b, err := m.run(ctx, "--query-gpu=name,memory.total,memory.free", "--format=csv,noheader,nounits")
	if err != nil {
		return nil, err
	}
	return ParseGPUs(b), nil
}

func (m machine) run(ctx context.Context, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	b, err := exec.CommandContext(ctx, m.smi, args...).Output()
	if err != nil {
		return nil, fmt.Errorf("nvidia-smi %s: %w", args[0], err)
	}
	return b, nil
}

// ParseGPUs reads `nvidia-smi --query-gpu=name,memory.total,memory.free --format=csv,noheader,nounits`
// (MiB values).
func ParseGPUs(b []byte) []GPU {
	var out []GPU
	for line := range strings.Lines(string(b)) {
		f := strings.Split(line, ",")
		if len(f) != 3 {
			continue
		}
		total, err1 := strconv.ParseInt(strings.TrimSpace(f[1]), 10, 64)
		free, err2 := strconv.ParseInt(strings.TrimSpace(f[2]), 10, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		out = append(out, GPU{Name: strings.TrimSpace(f[0]), Total: total << 20, Free: free << 20})
	}
	return out
}

// ParseComputeApps reads `nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits`.
func ParseComputeApps(b []byte) map[int]int64 {
	out := map[int]int64{}
	for line := range strings.Lines(string(b)) {
		f := strings.Split(line, ",")
		if len(f) != 2 {
			continue
		}
		pid, err1 := strconv.Atoi(strings.TrimSpace(f[0]))
		used, err2 := strconv.ParseInt(strings.TrimSpace(f[1]), 10, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		out[pid] += used << 20
	}
	return out
}
