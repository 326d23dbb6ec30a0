package testbed_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/child"
	"github.com/llamatray/llamatray/router/envconfig"
	"github.com/llamatray/llamatray/router/mem"
	"github.com/llamatray/llamatray/router/testbed"
	"github.com/llamatray/llamatray/router/testbed/simhold"
)

// On a simulated machine with two 16 GiB GPUs the fake llama-server lists them, splits a 10 GiB
// model with -ngl 99 over both by their memory, prints llama.cpp's buffer lines (which the child
// supervisor reads as per device), books what it holds per device, and frees it when it exits.
func TestFakeOnSimulatedMachine(t *testing.T) {
	bin := testbed.FakeLlamaServer(t)
	dir := t.TempDir()
	machine := filepath.Join(dir, "two.json")
	if err := os.WriteFile(machine, []byte(`{"name": "two 16 GB GPUs", "ram_mib": 65536, "gpus": [{"device": "CUDA0", "name": "GPU A", "mib": 16384}, {"device": "CUDA1", "name": "GPU B", "mib": 16384}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(string(envconfig.SimMachine), machine)
	out, err := exec.Command(bin, "--list-devices").Output()
	if err != nil {
		t.Fatal(err)
	}
	devs := mem.ParseListDevices(out)
	if len(devs) != 2 || devs[1].Name != "CUDA1" || devs[1].Total != 16<<30 {
		t.Fatalf("--list-devices: %s", out)
	}
	model := filepath.Join(dir, "m.gguf")
	os.WriteFile(model, []byte("GGUF"), 0o644)
	os.WriteFile(model+".fake.json", []byte(`{"sim_model_mib": 10240, "sim_kv_mib": 1024, "sim_layers": 31, "load_time": "50ms"}`), 0o644)
	events := make(chan child.Event, 16)
	c, err := child.Start(child.Spec{Model: "m", Binary: bin, Args: []string{"-m", model, "-ngl", "99"}, LoadTimeout: time.Minute, StopTimeout: 5 * time.Second},
		func(ev child.Event) { events <- ev })
	if err != nil {
		t.Fatal(err)
	}
	var ready child.Event
	for ev := range events {
		if ev.Kind == child.Ready || ev.Kind == child.Exited {
			ready = ev
			break
		}
	}
	if ready.Kind != child.Ready {
		t.Fatalf("child: %v %v", ready.Err, ready.LogTail)
	}
	const mib = int64(1) << 20
	want := map[string]int64{"CUDA0": (5120 + 512 + 300) * mib, "CUDA1": (5120 + 512 + 300) * mib, child.HostDevice: 16 * mib}
	for d, n := range want {
		if got := ready.Buffers[d]; got < n-mib || got > n+mib {
			t.Errorf("%s: %d MiB, want %d MiB (%v)", d, got>>20, n>>20, ready.Buffers)
		}
	}
	s, err := mem.Sim(machine).System(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if free := s.GPUs[0].Free; free > (16384-5900)*mib || free < (16384-6000)*mib {
		t.Fatalf("CUDA0 free %d MiB while the model holds about 5932", free>>20)
	}
	c.Stop(false)
	<-c.Done()
	if s, _ := mem.Sim(machine).System(t.Context()); s.GPUs[0].Free != 16<<30 || s.GPUs[1].Free != 16<<30 {
		t.Fatalf("after exit: %+v", s.GPUs)
	}
	if logs := strings.Join(c.Logs(), "\n"); !strings.Contains(logs, "CUDA1 model buffer size") {
		t.Fatalf("no CUDA1 model buffer line:\n%s", logs)
	}
}

// simMachine writes a machine description into a new folder and points the fake at it.
func simMachine(t *testing.T, desc string) string {
	t.Helper()
	machine := filepath.Join(t.TempDir(), "machine.json")
	if err := os.WriteFile(machine, []byte(desc), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(string(envconfig.SimMachine), machine)
	return machine
}

// startOnSim starts the fake llama-server on the simulated machine with a model whose sidecar is
// knobs, and returns it once ready with its buffer report.
func startOnSim(t *testing.T, machine, knobs string, args ...string) (*child.Child, child.Event) {
	t.Helper()
	bin := testbed.FakeLlamaServer(t)
	model := filepath.Join(filepath.Dir(machine), "m.gguf")
	os.WriteFile(model, []byte("GGUF"), 0o644)
	os.WriteFile(model+".fake.json", []byte(knobs), 0o644)
	events := make(chan child.Event, 16)
	c, err := child.Start(child.Spec{Model: "m", Binary: bin, Args: append([]string{"-m", model}, args...), LoadTimeout: time.Minute, StopTimeout: 5 * time.Second},
		func(ev child.Event) { events <- ev })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Stop(true); <-c.Done() })
	for ev := range events {
		if ev.Kind == child.Ready {
			return c, ev
		}
		if ev.Kind == child.Exited {
			t.Fatalf("child: %v %v", ev.Err, ev.LogTail)
		}
	}
	t.Fatal("no ready event")
	return nil, child.Event{}
}

const (
	mib       = int64(1) << 20
	oneGPU    = `{"name": "24 GB", "ram_mib": 65536, "gpus": [{"device": "CUDA0", "name": "GPU A", "mib": 24576}]}`
	big20GiB  = `{"sim_model_mib": 20480, "sim_kv_mib": 1024, "sim_layers": 31, "load_time": "10ms"}`
	perLayer  = (20480 + 1024) / 32 // weights and KV of one of 31 layers and the output layer
	computeMB = 300
)

// A partly offloaded model holds the layers left on the CPU in RAM, as llama-server does, and says
// so in its CPU_Mapped model and CPU KV buffer lines.
func TestFakePartialOffloadHoldsRAM(t *testing.T) {
	machine := simMachine(t, oneGPU)
	c, ready := startOnSim(t, machine, big20GiB, "-ngl", "16")
	if got, want := ready.Buffers["CUDA0"], (16*perLayer+computeMB)*mib; got < want-mib || got > want+mib {
		t.Errorf("CUDA0: %d MiB, want %d", got>>20, want>>20)
	}
	if got, want := ready.Buffers[child.HostDevice], (16*perLayer+16)*mib; got < want-mib || got > want+mib {
		t.Errorf("host: %d MiB, want %d (%v)", got>>20, want>>20, ready.Buffers)
	}
	s, err := mem.Sim(machine).System(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if held := s.Total - s.Available; held < (16*perLayer)*mib || held > (16*perLayer+20)*mib {
		t.Errorf("RAM held %d MiB, want the CPU share, about %d", held>>20, 16*perLayer)
	}
	logs := strings.Join(c.Logs(), "\n")
	for _, line := range []string{"CPU_Mapped model buffer size", "CPU KV buffer size", "offloaded 16/32 layers to GPU"} {
		if !strings.Contains(logs, line) {
			t.Errorf("no %q line:\n%s", line, logs)
		}
	}
}

// With --fit on (the default) and no -ngl, the fake offloads only the layers that leave each device
// its --fit-target margin free, the rest in RAM; a given -ngl wins over --fit.
func TestFakeFitTarget(t *testing.T) {
	for _, c := range []struct {
		name   string
		args   []string
		layers int64
	}{
		// 16 GiB free, 4 GiB margin: 12 GiB for 17 layers of 672 MiB and the compute buffer.
		{"fit", []string{"--fit-target", "4096"}, 17},
		{"fit off", []string{"--fit", "off", "--fit-target", "4096"}, 32},
		{"-ngl wins", []string{"--fit-target", "4096", "-ngl", "99"}, 32},
	} {
		t.Run(c.name, func(t *testing.T) {
			machine := simMachine(t, oneGPU)
			if err := simhold.Other(machine, mem.SimHolding{Devices: map[string]int64{"CUDA0": 8192 * mib}}); err != nil {
				t.Fatal(err)
			}
			p, ready := startOnSim(t, machine, big20GiB, c.args...)
			if got, want := ready.Buffers["CUDA0"], (c.layers*perLayer+computeMB)*mib; got < want-mib || got > want+mib {
				t.Errorf("CUDA0: %d MiB, want %d", got>>20, want>>20)
			}
			if line := fmt.Sprintf("offloaded %d/32 layers to GPU", c.layers); !strings.Contains(strings.Join(p.Logs(), "\n"), line) {
				t.Errorf("no %q line:\n%s", line, strings.Join(p.Logs(), "\n"))
			}
		})
	}
}
