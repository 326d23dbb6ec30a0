package child

import (
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// Device buffers: while a model loads, llama.cpp reports every buffer it allocates, per buffer type
// (a device, or host memory in one of its forms):
//
//	load_tensors:   CPU_Mapped model buffer size =   258.61 MiB
//	load_tensors:        CUDA0 model buffer size =  4403.49 MiB
//	llama_context:  CUDA_Host  output buffer size =     0.58 MiB
//	llama_kv_cache:      CUDA0 KV buffer size =  1024.00 MiB
//	sched_reserve:       CUDA0 compute buffer size =   300.01 MiB
//
// at the log verbosity that prints informational lines. This is the child's own measure of what it
// holds on each device, which per-device budgets learn from.

// HostDevice names host memory (RAM) in a buffer report.
const HostDevice = "CPU"

// An RPC device's buffer type carries its server's end, its device number being the server's own:
// "RPC0[127.0.0.1:50052] model buffer size = ..." (kept whole: RPC0 of each server is another device).
var bufferLine = regexp.MustCompile(`\b([A-Za-z][A-Za-z0-9_]*(?:\[[^\]\s]*\])?)\s+(model|KV|RS|output|compute)\s+buffer size\s*=\s*([0-9]+(?:\.[0-9]+)?)\s*MiB`)

// parseBufferLine reads one buffer report line: the buffer type as printed, what the buffer holds,
// and its size in bytes.
func parseBufferLine(line string) (bufType, kind string, bytes int64, ok bool) {
	if !strings.Contains(line, "buffer size") {
		return "", "", 0, false
	}
	m := bufferLine.FindStringSubmatch(line)
	if m == nil {
		return "", "", 0, false
	}
	mib, err := strconv.ParseFloat(m[3], 64)
	if err != nil {
		return "", "", 0, false
	}
	return m[1], m[2], int64(mib * (1 << 20)), true
}

// bufferDevice maps a buffer type to the device whose memory it takes: host forms (CPU, CPU_Mapped,
// CPU_REPACK, CUDA_Host, Vulkan_Host, ...) to HostDevice, a device's split or mapped buffers to the
// device (CUDA0_Split → CUDA0).
func bufferDevice(bufType string) string {
	if strings.HasPrefix(bufType, "CPU") || strings.HasSuffix(bufType, "_Host") {
		return HostDevice
	}
	for _, suffix := range []string{"_Split", "_Mapped", "_REPACK"} {
		bufType = strings.TrimSuffix(bufType, suffix)
	}
	return bufType
}

// bufferReport gathers the buffer lines of one load. llama-server may first try the parameters out
// (--fit prints a dry run, with the same lines), so a model buffer line after the other kinds starts
// a new pass and the earlier one is dropped.
type bufferReport struct {
	mu     sync.Mutex       // guards sizes and closed; fed from the output goroutines, read at ready
	sizes  map[string]int64 // buffer type + "\x00" + kind → bytes, of the current pass
	closed bool             // the pass reached its KV, output or compute buffers
}

// add takes one output line into the report.
func (r *bufferReport) add(line string) {
	bufType, kind, n, ok := parseBufferLine(line)
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if kind == "model" && r.closed {
		r.sizes, r.closed = nil, false
	}
	if kind != "model" {
		r.closed = true
	}
	if r.sizes == nil {
		r.sizes = map[string]int64{}
	}
	r.sizes[bufType+"\x00"+kind] = n
}

// perDevice sums the current pass by device; nil when no buffer line was seen.
func (r *bufferReport) perDevice() map[string]int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.sizes) == 0 {
		return nil
	}
	out := map[string]int64{}
	for k, n := range r.sizes {
		bufType, _, _ := strings.Cut(k, "\x00")
		out[bufferDevice(bufType)] += n
	}
	return out
}
