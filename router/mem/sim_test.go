package mem_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/llamatray/llamatray/router/mem"
	"github.com/llamatray/llamatray/router/testbed/simhold"
)

func TestSimMachine(t *testing.T) {
	const mib = int64(1) << 20
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	two := write("two.json", `{"name": "two 16 GB GPUs", "ram_mib": 65536, "gpus": [{"device": "CUDA0", "name": "A", "mib": 16384}, {"device": "CUDA1", "name": "B", "mib": 16384}]}`)
	p := mem.Sim(two)
	if err := simhold.Hold(two, os.Getpid(), mem.SimHolding{RAM: 1024 * mib, Devices: map[string]int64{"CUDA1": 10240 * mib}}); err != nil {
		t.Fatal(err)
	}
	if err := simhold.Hold(two, 1<<30, mem.SimHolding{RAM: 8192 * mib}); err != nil { // no such process: holds nothing
		t.Fatal(err)
	}
	if err := simhold.Other(two, mem.SimHolding{RAM: 2048 * mib}); err != nil {
		t.Fatal(err)
	}
	s, err := p.System(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if s.Total != 65536*mib || s.Available != (65536-1024-2048)*mib || len(s.GPUs) != 2 || s.GPUs[0].Free != 16384*mib || s.GPUs[1].Free != 6144*mib || s.GPUs[1].Device != "CUDA1" {
		t.Fatalf("system %+v", s)
	}
	if rss, err := p.ProcessRSS(t.Context(), os.Getpid()); err != nil || rss != 1024*mib {
		t.Fatalf("rss %d %v", rss, err)
	}
	simhold.Release(two, os.Getpid())
	if s, _ := p.System(t.Context()); s.GPUs[1].Free != 16384*mib {
		t.Fatalf("after release %+v", s.GPUs)
	}

	mac := write("mac.json", `{"name": "36 GB Mac", "ram_mib": 36864, "unified": true, "gpus": [{"device": "MTL0", "name": "Apple M3 Pro"}]}`)
	if err := simhold.Hold(mac, os.Getpid(), mem.SimHolding{RAM: 512 * mib, Devices: map[string]int64{"MTL0": 8192 * mib}}); err != nil {
		t.Fatal(err)
	}
	s, err = mem.Sim(mac).System(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !s.Unified || s.GPUs[0].Total != 24576*mib || s.GPUs[0].Free != 16384*mib || s.Available != (36864-512-8192)*mib {
		t.Fatalf("mac %+v", s)
	}
	for _, bad := range []string{`{"ram_mib": 0}`, `{"ram_mib": 1, "gpus": [{"device": "CUDA0"}]}`, `{"ram_mib": 1, "unified": true}`, `{"ram_mib": 1, "disk": 2}`} {
		if _, err := mem.LoadSimMachine(write("bad.json", bad)); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}
