// Command gpucheck prints what Llamatray's memory probe reads of this machine's GPUs — through NVML
// (the driver's library, loaded at run time), else nvidia-smi, else amdgpu's sysfs, as the engine
// reads them — beside nvidia-smi's own figures and, with -llama-server, the devices that build lists.
// With -machine FILE it writes the reading as a machine description for `chaos -sim -machine FILE`,
// so the simulated workload runs on this machine's real sizes. scripts/gpu-check.sh runs it.
//
//	go run ./router/testbed/gpucheck [-llama-server PATH] [-machine FILE]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/mem"
)

func main() {
	bin := flag.String("llama-server", "", "also list the devices of this llama-server build (--list-devices)")
	out := flag.String("machine", "", "write the reading as a simulated machine description (JSON) to this file")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := run(ctx, *bin, *out); err != nil {
		fmt.Fprintln(os.Stderr, "gpucheck:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, bin, out string) error {
	sys, err := mem.Machine().System(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("RAM: %s total, %s available\n", config.HumanSize(sys.Total), config.HumanSize(sys.Available))
	if len(sys.GPUs) == 0 {
		fmt.Println("probe: no GPU (no NVML, no nvidia-smi, no amdgpu)")
	}
	for i, g := range sys.GPUs {
		fmt.Printf("probe GPU %d: %q device %q: %s total, %s free\n", i, g.Name, g.Device, config.HumanSize(g.Total), config.HumanSize(g.Free))
	}
	if smi, err := exec.CommandContext(ctx, "nvidia-smi", "--query-gpu=name,memory.total,memory.free", "--format=csv,noheader,nounits").Output(); err == nil {
		for i, g := range mem.ParseGPUs(smi) {
			fmt.Printf("nvidia-smi GPU %d: %q: %s total, %s free\n", i, g.Name, config.HumanSize(g.Total), config.HumanSize(g.Free))
		}
	} else {
		fmt.Println("nvidia-smi:", err)
	}
	if bin != "" {
		devs, err := mem.ListDevices(ctx, bin)
		if err != nil {
			fmt.Println("llama-server --list-devices:", err)
		}
		for _, d := range devs {
			fmt.Printf("llama-server device %s: %q, %s\n", d.Name, d.Description, config.HumanSize(d.Total))
		}
	}
	if out == "" {
		return nil
	}
	m := mem.SimMachine{Name: "this machine", RAMMiB: sys.Total >> 20, Unified: sys.Unified}
	var names []string
	for i, g := range sys.GPUs {
		dev := g.Device
		if dev == "" {
			dev = fmt.Sprintf("CUDA%d", i)
		}
		m.GPUs = append(m.GPUs, mem.SimGPU{Device: dev, Name: g.Name, MiB: g.Total >> 20})
		names = append(names, fmt.Sprintf("%s %s", g.Name, config.HumanSize(g.Total)))
	}
	if len(names) > 0 {
		m.Name = strings.Join(names, " + ") + " + " + config.HumanSize(sys.Total) + " RAM"
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(out, append(b, '\n'), 0o644); err != nil {
		return err
	}
	fmt.Println("wrote", out)
	return nil
}
