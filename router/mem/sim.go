package mem

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// A simulated machine's description file (envconfig.SimMachine): when it is set, Machine's probe
// reads the machine from it instead of measuring this one, and the fake llama-server
// (router/testbed/fakellama) books what it holds per device there: a 24 GB GPU, two GPUs or an
// Apple-silicon Mac, on any machine.

// SimMachine is a simulated machine's description (JSON):
//
//	{"name": "24 GB NVIDIA + 64 GB RAM", "ram_mib": 65536,
//	 "gpus": [{"device": "CUDA0", "name": "NVIDIA GeForce RTX 4090", "mib": 24576}]}
//
// With "unified": true its one GPU (device MTL0) is Apple silicon's: it uses RAM and may hold at most
// the Metal working-set limit (MetalWorkingSet of ram_mib, or wired_limit_mib when set).
type SimMachine struct {
	Name          string   `json:"name"`
	RAMMiB        int64    `json:"ram_mib"`
	Unified       bool     `json:"unified,omitempty"`
	WiredLimitMiB int64    `json:"wired_limit_mib,omitempty"`
	GPUs          []SimGPU `json:"gpus,omitempty"`
}

// SimGPU is one simulated GPU.
type SimGPU struct {
	Device string `json:"device"` // llama-server's name for it: CUDA0, ROCm1, MTL0
	Name   string `json:"name"`
	MiB    int64  `json:"mib"` // its memory (unified: ignored, the working set is the limit)
}

// SimHolding is what one process holds on a simulated machine: RAM and bytes per device. The fake
// llama-server writes its own (<held dir>/<pid>.json); a test writes other programs' as other.json
// (router/testbed/simhold).
type SimHolding struct {
	RAM     int64            `json:"ram"`
	Devices map[string]int64 `json:"devices,omitempty"`
}

// LoadSimMachine reads and checks a machine description.
func LoadSimMachine(path string) (SimMachine, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return SimMachine{}, fmt.Errorf("simulated machine: %w", err)
	}
	var m SimMachine
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return SimMachine{}, fmt.Errorf("simulated machine %s: %w", path, err)
	}
	if m.RAMMiB <= 0 {
		return SimMachine{}, fmt.Errorf("simulated machine %s: ram_mib must be positive", path)
	}
	for _, g := range m.GPUs {
		if g.Device == "" || (!m.Unified && g.MiB <= 0) {
			return SimMachine{}, fmt.Errorf("simulated machine %s: every GPU needs a device name and, unless unified, mib", path)
		}
	}
	if m.Unified && len(m.GPUs) != 1 {
		return SimMachine{}, fmt.Errorf("simulated machine %s: a unified machine has one GPU", path)
	}
	return m, nil
}

// Devices is the machine's GPUs at their full size (unified: the Metal working set).
func (m SimMachine) Devices() []GPU {
	out := make([]GPU, len(m.GPUs))
	for i, g := range m.GPUs {
		total := g.MiB << 20
		if m.Unified {
			total = MetalWorkingSet(m.RAMMiB<<20, m.WiredLimitMiB)
		}
		out[i] = GPU{Name: g.Name, Device: g.Device, Total: total, Free: total}
	}
	return out
}

// SimHeldDir is where the processes on the machine described at path book what they hold.
func SimHeldDir(path string) string { return path + ".held" }

// SimHoldings reads what every live process on the machine holds, by pid, and what other programs
// hold (pid 0). A process that is gone (killed) holds nothing.
func SimHoldings(path string) (map[int]SimHolding, error) {
	ents, err := os.ReadDir(SimHeldDir(path))
	if errors.Is(err, os.ErrNotExist) {
		return map[int]SimHolding{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("simulated machine: %w", err)
	}
	out := map[int]SimHolding{}
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok {
			continue
		}
		pid := 0
		if name != "other" {
			if pid, err = strconv.Atoi(name); err != nil || !alive(pid) {
				continue
			}
		}
		b, err := os.ReadFile(filepath.Join(SimHeldDir(path), e.Name()))
		if err != nil {
			continue // released meanwhile
		}
		var h SimHolding
		if json.Unmarshal(b, &h) == nil {
			out[pid] = h
		}
	}
	return out, nil
}

// Sim is the probe of a simulated machine: RAM and each GPU as described, less what the processes
// on it hold (their held files), and each process's RSS as what it books.
func Sim(path string) Probe { return simProbe{path: path} }

type simProbe struct{ path string }

func (p simProbe) System(context.Context) (System, error) {
	m, err := LoadSimMachine(p.path)
	if err != nil {
		return System{}, err
	}
	held, err := SimHoldings(p.path)
	if err != nil {
		return System{}, err
	}
	s := System{Total: m.RAMMiB << 20, Unified: m.Unified, GPUs: m.Devices()}
	s.Available = s.Total
	for _, h := range held {
		s.Available -= h.RAM
		for i := range s.GPUs {
			n := h.Devices[s.GPUs[i].Device]
			s.GPUs[i].Free -= n
			if m.Unified {
				s.Available -= n
			}
		}
	}
	s.Available = max(s.Available, 0)
	for i := range s.GPUs {
		s.GPUs[i].Free = max(s.GPUs[i].Free, 0)
	}
	return s, nil
}

func (p simProbe) ProcessRSS(ctx context.Context, pid int) (int64, error) {
	held, err := SimHoldings(p.path)
	if err != nil {
		return 0, err
	}
	h, ok := held[pid]
	if !ok || pid == 0 {
		return machine{}.ProcessRSS(ctx, pid)
	}
	rss := h.RAM
	if m, err := LoadSimMachine(p.path); err == nil && m.Unified {
		for _, n := range h.Devices {
			rss += n
		}
	}
	return rss, nil
}

// ProcessVRAM is empty: the engine learns device memory from the children's buffer reports.
func (p simProbe) ProcessVRAM(context.Context) (map[int]int64, error) { return map[int]int64{}, nil }
