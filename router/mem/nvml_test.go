//go:build linux

package mem

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/llamatray/llamatray/router/envconfig"
)

// fakeNVML compiles the NVML stand-in of the test bed (router/testbed/fakenvml) into dir, or skips
// the test where there is no C compiler.
func fakeNVML(t *testing.T, dir string) string {
	t.Helper()
	cc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("no gcc: the NVML stand-in (router/testbed/fakenvml/fakenvml.c) cannot be built, so the NVML probe is not tested here")
	}
	lib := filepath.Join(dir, "libnvidia-ml.so.1")
	if out, err := exec.Command(cc, "-shared", "-fPIC", "-o", lib, "../testbed/fakenvml/fakenvml.c").CombinedOutput(); err != nil {
		t.Fatalf("building the NVML stand-in: %v\n%s", err, out)
	}
	return lib
}

// nvmlHelperEnv runs this test binary as a probe in a fresh process: the library and the GPUs it
// reports come from that process's own environment, as they would on a real machine.
const nvmlHelperEnv = "LLAMATRAY_TEST_NVML_HELPER"

// TestNVMLHelper prints what Machine reads of the GPUs, when run by TestNVMLProbe.
func TestNVMLHelper(t *testing.T) {
	if os.Getenv(nvmlHelperEnv) == "" {
		t.Skip("run by TestNVMLProbe")
	}
	s, err := Machine().System(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(s.GPUs)
	fmt.Printf("GPUS %s\n", b)
}

// The probe reads NVIDIA GPUs through NVML loaded at run time (LLAMATRAY_NVML_LIB names it), before
// nvidia-smi; when NVML does not start (no driver), nvidia-smi's figures are used.
func TestNVMLProbe(t *testing.T) {
	dir := t.TempDir()
	lib := fakeNVML(t, dir)
	bin := filepath.Join(dir, "bin")
	os.Mkdir(bin, 0o755)
	smi := "#!/bin/sh\ncase \"$1\" in --query-gpu=*) echo 'Tesla from nvidia-smi, 8192, 4096';; esac\n"
	if err := os.WriteFile(filepath.Join(bin, "nvidia-smi"), []byte(smi), 0o755); err != nil {
		t.Fatal(err)
	}
	const mib = int64(1) << 20
	fromNVML := []GPU{{Name: "NVIDIA GeForce RTX 4090", Total: 24564 * mib, Free: 20000 * mib}, {Name: "NVIDIA RTX A4000", Total: 16376 * mib, Free: 1234 * mib}}
	fromSMI := []GPU{{Name: "Tesla from nvidia-smi", Total: 8192 * mib, Free: 4096 * mib}}
	for _, c := range []struct {
		name string
		env  []string
		want []GPU
	}{
		{"NVML", nil, fromNVML},
		{"NVML does not start: nvidia-smi", []string{"FAKE_NVML_INIT=9"}, fromSMI},
		{"no NVML: nvidia-smi", []string{string(envconfig.NVMLLib) + "=" + filepath.Join(dir, "missing.so")}, fromSMI},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestNVMLHelper$", "-test.v")
			cmd.Env = append(os.Environ(), nvmlHelperEnv+"=1", string(envconfig.SimMachine)+"=", "PATH="+bin+":"+os.Getenv("PATH"), string(envconfig.NVMLLib)+"="+lib,
				"FAKE_NVML_GPUS=NVIDIA GeForce RTX 4090:24564:20000;NVIDIA RTX A4000:16376:1234")
			cmd.Env = append(cmd.Env, c.env...)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("probe: %v\n%s", err, out)
			}
			var got []GPU
			for _, line := range strings.Split(string(out), "\n") {
				if j, ok := strings.CutPrefix(line, "GPUS "); ok {
					if err := json.Unmarshal([]byte(j), &got); err != nil {
						t.Fatal(err)
					}
				}
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("GPUs %+v, want %+v\n%s", got, c.want, out)
			}
		})
	}
}
