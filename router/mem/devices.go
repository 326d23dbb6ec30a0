package mem

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Device is one compute device a llama-server build can use, as `llama-server --list-devices` lists
// it: every backend the binary was built with (CUDA, ROCm, Vulkan, Metal, SYCL, ...), each device
// with its own memory. Per-device budgets start from this list.
type Device struct {
	Name        string // backend and index, as llama-server's --device takes it: CUDA0, Vulkan1, MTL0
	Description string // e.g. "NVIDIA GeForce RTX 4090"
	Total       int64  // bytes
	Free        int64  // bytes, when listed
}

// deviceLine is one device of `llama-server --list-devices`: "  CUDA0: NVIDIA P104-100 (8109 MiB,
// 8020 MiB free)"; some backends print no free figure.
var deviceLine = regexp.MustCompile(`^\s*([A-Za-z][A-Za-z_]*\d+):\s+(.*?)\s*\((\d+) MiB(?:,\s*(\d+) MiB free)?\)\s*$`)

// ParseListDevices reads the output of `llama-server --list-devices`. Lines that are not devices
// (the "Available devices:" header, "(none)", backend load messages) are skipped.
func ParseListDevices(b []byte) []Device {
	var out []Device
	for line := range strings.Lines(string(b)) {
		m := deviceLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		total, err := strconv.ParseInt(m[3], 10, 64)
		if err != nil {
			continue
		}
		d := Device{Name: m[1], Description: m[2], Total: total << 20}
		if m[4] != "" {
			if free, err := strconv.ParseInt(m[4], 10, 64); err == nil {
				d.Free = free << 20
			}
		}
		out = append(out, d)
	}
	return out
}

// ListDevices runs `binary --list-devices` and parses what it prints. A build with no GPU backend
// lists none.
func ListDevices(ctx context.Context, binary string) ([]Device, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	b, err := exec.CommandContext(ctx, binary, "--list-devices").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("%s --list-devices: %w", binary, err)
	}
	return ParseListDevices(b), nil
}

// AMDGPUs reads the VRAM of AMD GPUs from the amdgpu driver's sysfs files under root
// (/sys/class/drm): card*/device/mem_info_vram_total and mem_info_vram_used, in bytes. Cards without
// them (other drivers, connectors such as card0-DP-1) are skipped.
func AMDGPUs(root string) []GPU {
	cards, _ := filepath.Glob(filepath.Join(root, "card*"))
	sort.Strings(cards)
	var out []GPU
	for _, card := range cards {
		if strings.Contains(filepath.Base(card), "-") {
			continue
		}
		dev := filepath.Join(card, "device")
		total, err1 := readInt(filepath.Join(dev, "mem_info_vram_total"))
		used, err2 := readInt(filepath.Join(dev, "mem_info_vram_used"))
		if err1 != nil || err2 != nil || total <= 0 {
			continue
		}
		name := "AMD GPU " + filepath.Base(card)
		if b, err := os.ReadFile(filepath.Join(dev, "product_name")); err == nil && strings.TrimSpace(string(b)) != "" {
			name = strings.TrimSpace(string(b))
		}
		out = append(out, GPU{Name: name, Total: total, Free: max(total-used, 0)})
	}
	return out
}

func readInt(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return n, nil
}

// MetalWorkingSet is what the GPU of an Apple-silicon Mac with ram bytes of memory may use
// (Metal's recommendedMaxWorkingSetSize): iogpu.wired_limit_mb when it is set (wiredLimitMiB > 0),
// else about two thirds of RAM up to 36 GiB and three quarters above, as macOS sets it.
func MetalWorkingSet(ram int64, wiredLimitMiB int64) int64 {
	if wiredLimitMiB > 0 {
		return min(wiredLimitMiB<<20, ram)
	}
	if ram <= 36<<30 {
		return ram / 3 * 2
	}
	return ram / 4 * 3
}

// Named is a probe that names the GPUs after llama-server's devices (CUDA0, ROCm0, Vulkan0, ...), as
// its buffer report prints them, and adds the devices no driver probe measures (a Vulkan device, a
// GPU of another vendor): `llama-server --list-devices` is run once per binary. Binary says which
// llama-server children run now ("" = none yet).
func Named(p Probe, binary func() string) Probe { return &named{Probe: p, binary: binary} }

type named struct {
	Probe
	binary func() string
	mu     sync.Mutex // guards path and devs; list-devices runs outside it
	path   string     // the binary devs were listed for
	devs   []Device
}

func (n *named) System(ctx context.Context) (System, error) {
	s, err := n.Probe.System(ctx)
	if err != nil {
		return s, err
	}
	s.GPUs = NameGPUs(s.GPUs, n.devices(ctx))
	return s, nil
}

// devices lists the current binary's devices, once per binary; a binary that fails to list them
// (an old build, a fake) has none.
func (n *named) devices(ctx context.Context) []Device {
	bin := ""
	if n.binary != nil {
		bin = n.binary()
	}
	n.mu.Lock()
	if bin == n.path {
		d := n.devs
		n.mu.Unlock()
		return d
	}
	n.mu.Unlock()
	var devs []Device
	if bin != "" {
		devs, _ = ListDevices(ctx, bin)
	}
	n.mu.Lock()
	n.path, n.devs = bin, devs
	n.mu.Unlock()
	return devs
}

// NameGPUs joins what the driver probes measured (gpus: nvidia-smi, amdgpu sysfs, Apple's working
// set) with llama-server's devices. A measured GPU without a device name takes the name of the
// device of its vendor's backend in the same order (NVIDIA → CUDA, AMD → ROCm/HIP). Listed devices
// are added as GPUs of their own (at their listed memory) only when no GPU was measured: a Vulkan
// device beside a measured GPU is most likely the same hardware, seen through another backend.
func NameGPUs(gpus []GPU, devs []Device) []GPU {
	out := append([]GPU(nil), gpus...)
	if len(out) == 0 {
		for _, d := range devs {
			free := d.Free
			if free <= 0 || free > d.Total {
				free = d.Total
			}
			out = append(out, GPU{Name: d.Description, Device: d.Name, Total: d.Total, Free: free})
		}
		return out
	}
	next := map[string]int{} // backend → next device of it to hand out
	for i := range out {
		if out[i].Device != "" {
			continue
		}
		for _, backend := range vendorBackends(out[i].Name) {
			if d, ok := nth(devs, backend, next[backend]); ok {
				out[i].Device = d.Name
				next[backend]++
				break
			}
		}
	}
	return out
}

// vendorBackends are the llama.cpp backends that drive a GPU whose driver name is name.
func vendorBackends(name string) []string {
	n := strings.ToLower(name)
	switch {
	case strings.Contains(n, "nvidia"), strings.Contains(n, "geforce"), strings.Contains(n, "quadro"), strings.Contains(n, "tesla"):
		return []string{"CUDA"}
	case strings.Contains(n, "amd"), strings.Contains(n, "radeon"), strings.Contains(n, "instinct"):
		return []string{"ROCm", "HIP"}
	}
	return nil
}

// nth is the i-th device of backend in devs (CUDA0, CUDA1, ...).
func nth(devs []Device, backend string, i int) (Device, bool) {
	for _, d := range devs {
		rest, ok := strings.CutPrefix(d.Name, backend)
		if ok && rest != "" && rest[0] >= '0' && rest[0] <= '9' {
			if i == 0 {
				return d, true
			}
			i--
		}
	}
	return Device{}, false
}
