//go:build linux || windows

package mem

import (
	"bytes"
	"fmt"

	"github.com/ebitengine/purego"
)

// NVIDIA GPUs through NVML, the library the NVIDIA driver installs (libnvidia-ml.so.1, nvml.dll),
// loaded when the probe is made: nothing of it is needed to build Llamatray, and a machine without
// it falls back to nvidia-smi. The functions and layouts are nvml.h's:
//
//	nvmlReturn_t nvmlInit_v2(void);                                   // nvmlReturn_t: a C enum, 0 = NVML_SUCCESS
//	nvmlReturn_t nvmlShutdown(void);
//	nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount);
//	nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device); // an opaque pointer
//	nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length);
//	nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory);
//	typedef struct { unsigned long long total, free, used; } nvmlMemory_t;                // bytes

// nvmlMemory is nvmlMemory_t.
type nvmlMemory struct {
	Total, Free, Used uint64
}

// nvmlNameSize is NVML_DEVICE_NAME_V2_BUFFER_SIZE.
const nvmlNameSize = 96

// nvmlLib is an initialised NVML. Its functions are safe for concurrent use (NVML is thread-safe).
type nvmlLib struct {
	shutdown func() int32
	count    func(*uint32) int32
	handle   func(uint32, *uintptr) int32
	name     func(uintptr, *byte, uint32) int32
	memory   func(uintptr, *nvmlMemory) int32
}

// nvmlError is an NVML return code other than NVML_SUCCESS.
type nvmlError struct {
	call string
	code int32
}

func (e nvmlError) Error() string {
	names := map[int32]string{1: "uninitialized", 2: "invalid argument", 3: "not supported", 4: "no permission",
		6: "not found", 7: "insufficient size", 9: "driver not loaded", 12: "library not found", 13: "function not found",
		15: "GPU is lost", 999: "unknown error"}
	if n, ok := names[e.code]; ok {
		return fmt.Sprintf("NVML %s: %s (%d)", e.call, n, e.code)
	}
	return fmt.Sprintf("NVML %s: error %d", e.call, e.code)
}

// openNVML loads the NVML library at path (a file name is searched as the system loader does) and
// initialises it.
func openNVML(path string) (*nvmlLib, error) {
	h, err := loadLibrary(path)
	if err != nil {
		return nil, fmt.Errorf("loading NVML (%s): %w", path, err)
	}
	n := &nvmlLib{}
	var initFn func() int32
	for _, f := range []struct {
		name string
		fn   any
	}{
		{"nvmlInit_v2", &initFn}, {"nvmlShutdown", &n.shutdown}, {"nvmlDeviceGetCount_v2", &n.count},
		{"nvmlDeviceGetHandleByIndex_v2", &n.handle}, {"nvmlDeviceGetName", &n.name}, {"nvmlDeviceGetMemoryInfo", &n.memory},
	} {
		addr, err := symbol(h, f.name)
		if err != nil {
			return nil, fmt.Errorf("NVML (%s) has no %s: %w", path, f.name, err)
		}
		purego.RegisterFunc(f.fn, addr)
	}
	if rc := initFn(); rc != 0 {
		return nil, nvmlError{"nvmlInit_v2", rc}
	}
	return n, nil
}

// gpus reads every GPU's name and memory, in NVML's order (PCI bus order, as nvidia-smi's).
func (n *nvmlLib) gpus() ([]GPU, error) {
	var count uint32
	if rc := n.count(&count); rc != 0 {
		return nil, nvmlError{"nvmlDeviceGetCount_v2", rc}
	}
	out := make([]GPU, 0, count)
	for i := uint32(0); i < count; i++ {
		var dev uintptr
		if rc := n.handle(i, &dev); rc != 0 {
			return nil, nvmlError{"nvmlDeviceGetHandleByIndex_v2", rc}
		}
		name := make([]byte, nvmlNameSize)
		if rc := n.name(dev, &name[0], uint32(len(name))); rc != 0 {
			return nil, nvmlError{"nvmlDeviceGetName", rc}
		}
		if i := bytes.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		var m nvmlMemory
		if rc := n.memory(dev, &m); rc != 0 {
			return nil, nvmlError{"nvmlDeviceGetMemoryInfo", rc}
		}
		out = append(out, GPU{Name: string(name), Total: int64(min(m.Total, 1<<62)), Free: int64(min(m.Free, 1<<62))})
	}
	return out, nil
}

// close shuts NVML down (the library stays loaded).
func (n *nvmlLib) close() {
	if n != nil {
		n.shutdown()
	}
}
