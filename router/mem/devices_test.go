package mem

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestParseListDevices(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []Device
	}{
		{"no GPU backend", "Available devices:\n  (none)\n", nil},
		{"CUDA and Vulkan", "ggml_cuda_init: found 2 CUDA devices:\nAvailable devices:\n" +
			"  CUDA0: NVIDIA GeForce RTX 4090 (24080 MiB, 23664 MiB free)\n" +
			"  CUDA1: NVIDIA GeForce RTX 3060 (12044 MiB, 11800 MiB free)\n" +
			"  Vulkan0: llvmpipe (LLVM 19.1.7, 256 bits) (2048 MiB, 2048 MiB free)\n",
			[]Device{
				{Name: "CUDA0", Description: "NVIDIA GeForce RTX 4090", Total: 24080 << 20, Free: 23664 << 20},
				{Name: "CUDA1", Description: "NVIDIA GeForce RTX 3060", Total: 12044 << 20, Free: 11800 << 20},
				{Name: "Vulkan0", Description: "llvmpipe (LLVM 19.1.7, 256 bits)", Total: 2048 << 20, Free: 2048 << 20},
			}},
		{"no free figure", "Available devices:\n  MTL0: Apple M3 Max (98304 MiB)\n",
			[]Device{{Name: "MTL0", Description: "Apple M3 Max", Total: 98304 << 20}}},
		{"garbage", "CUDA0 NVIDIA (x MiB)\nAvailable devices:\n", nil},
	}
	for _, tc := range tests {
		if got := ParseListDevices([]byte(tc.in)); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: ParseListDevices = %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// The real llama-server lists its devices (none on a machine without a GPU backend).
func TestListDevicesRealServer(t *testing.T) {
	bin := os.Getenv("LLAMA_SERVER")
	if bin == "" {
		t.Skip("LLAMA_SERVER not set")
	}
	devs, err := ListDevices(t.Context(), bin)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range devs {
		if d.Name == "" || d.Total <= 0 {
			t.Errorf("implausible device %+v", d)
		}
	}
	t.Logf("devices: %+v", devs)
}

func TestAMDGPUs(t *testing.T) {
	root := t.TempDir()
	write := func(rel, s string) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("card0/device/mem_info_vram_total", "17163091968\n")
	write("card0/device/mem_info_vram_used", "1073741824\n")
	write("card0/device/product_name", "AMD Radeon RX 7800 XT\n")
	write("card0-DP-1/status", "connected\n")
	write("card1/device/vendor", "0x8086\n") // an Intel card: no amdgpu files
	write("card2/device/mem_info_vram_total", "8589934592")
	write("card2/device/mem_info_vram_used", "9999999999") // more than total: nothing free
	want := []GPU{
		{Name: "AMD Radeon RX 7800 XT", Total: 17163091968, Free: 17163091968 - 1073741824},
		{Name: "AMD GPU card2", Total: 8589934592, Free: 0},
	}
	if got := AMDGPUs(root); !reflect.DeepEqual(got, want) {
		t.Fatalf("AMDGPUs = %+v, want %+v", got, want)
	}
	if got := AMDGPUs(filepath.Join(root, "absent")); got != nil {
		t.Fatalf("no sysfs: %+v", got)
	}
}
