package mem

import (
	"context"
	"strings"
	"sync"
)

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
