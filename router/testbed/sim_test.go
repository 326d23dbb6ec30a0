package testbed_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/child"
	"github.com/llamatray/llamatray/router/mem"
	"github.com/llamatray/llamatray/router/testbed"
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
	t.Setenv(mem.SimEnv, machine)
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
