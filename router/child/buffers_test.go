package child

import (
	"reflect"
	"testing"
)

const mib = int64(1) << 20

// mibf converts MiB as printed to bytes, as the parser does.
func mibf(x float64) int64 { return int64(x * (1 << 20)) }

func TestParseBufferLine(t *testing.T) {
	tests := []struct {
		line    string
		bufType string
		kind    string
		bytes   int64
		ok      bool
	}{
		// llama-server 0.7.0 on this machine, at -v
		{"0.00.452.382 I load_tensors:   CPU_Mapped model buffer size =   258.61 MiB", "CPU_Mapped", "model", mibf(258.61), true},
		{"0.00.452.727 I llama_kv_cache:        CPU KV buffer size =     8.00 MiB", "CPU", "KV", 8 * mib, true},
		{"0.00.504.601 I sched_reserve:        CPU compute buffer size =    34.52 MiB", "CPU", "compute", mibf(34.52), true},
		{"0.00.452.676 I llama_context:        CPU  output buffer size =     0.01 MiB", "CPU", "output", mibf(0.01), true},
		// a CUDA build
		{"load_tensors:        CUDA0 model buffer size =  4403.49 MiB", "CUDA0", "model", mibf(4403.49), true},
		{"llama_context:  CUDA_Host  output buffer size =     0.58 MiB", "CUDA_Host", "output", mibf(0.58), true},
		{"llama_kv_cache:      CUDA1 KV buffer size =  1024.00 MiB", "CUDA1", "KV", 1024 * mib, true},
		// llama.cpp's RPC backend (--rpc), a device per worker end
		{"0.00.031.532 I load_tensors: RPC0[127.0.0.1:50199] model buffer size =     1.08 MiB", "RPC0[127.0.0.1:50199]", "model", mibf(1.08), true},
		{"0.00.037.962 I llama_kv_cache: RPC0[127.0.0.1:50200] KV buffer size =     0.50 MiB", "RPC0[127.0.0.1:50200]", "KV", mibf(0.50), true},
		{"srv  load_model: loading model '/m.gguf'", "", "", 0, false},
		{"buffer size = lots", "", "", 0, false},
	}
	for _, tc := range tests {
		bt, kind, n, ok := parseBufferLine(tc.line)
		if bt != tc.bufType || kind != tc.kind || n != tc.bytes || ok != tc.ok {
			t.Errorf("parseBufferLine(%q) = %q %q %d %v; want %q %q %d %v", tc.line, bt, kind, n, ok, tc.bufType, tc.kind, tc.bytes, tc.ok)
		}
	}
}

func TestBufferDevice(t *testing.T) {
	for in, want := range map[string]string{
		"CPU": HostDevice, "CPU_Mapped": HostDevice, "CPU_REPACK": HostDevice, "CUDA_Host": HostDevice, "Vulkan_Host": HostDevice,
		"CUDA0": "CUDA0", "CUDA1_Split": "CUDA1", "Vulkan0": "Vulkan0", "MTL0_Mapped": "MTL0", "ROCm0": "ROCm0",
	} {
		if got := bufferDevice(in); got != want {
			t.Errorf("bufferDevice(%q) = %q, want %q", in, got, want)
		}
	}
}

// The --fit dry run prints the same lines first; only the real load's count. Per device: model, KV
// and compute buffers together, host forms as RAM.
func TestBufferReport(t *testing.T) {
	var r bufferReport
	if r.perDevice() != nil {
		t.Fatal("an empty report has devices")
	}
	for _, l := range []string{
		// dry run
		"load_tensors:        CUDA0 model buffer size =     0.00 MiB",
		"llama_kv_cache:      CUDA0 KV buffer size =     0.00 MiB",
		"sched_reserve:       CUDA0 compute buffer size =   300.00 MiB",
		// the load
		"load_tensors:   CPU_Mapped model buffer size =   100.00 MiB",
		"load_tensors:        CUDA0 model buffer size =  4000.00 MiB",
		"load_tensors:        CUDA1 model buffer size =  2000.00 MiB",
		"llama_context:  CUDA_Host  output buffer size =     1.00 MiB",
		"llama_kv_cache:      CUDA0 KV buffer size =   512.00 MiB",
		"llama_kv_cache:      CUDA1 KV buffer size =   256.00 MiB",
		"sched_reserve:       CUDA0 compute buffer size =   300.00 MiB",
		"sched_reserve:       CUDA1 compute buffer size =   200.00 MiB",
		"sched_reserve:  CUDA_Host compute buffer size =    20.00 MiB",
		"srv  log line with nothing to count",
	} {
		r.add(l)
	}
	want := map[string]int64{HostDevice: 121 * mib, "CUDA0": 4812 * mib, "CUDA1": 2456 * mib}
	if got := r.perDevice(); !reflect.DeepEqual(got, want) {
		t.Fatalf("perDevice = %v, want %v", got, want)
	}
}
