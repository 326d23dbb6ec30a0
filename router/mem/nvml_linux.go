package mem

import "github.com/ebitengine/purego"

// nvmlDefault is the NVML library the NVIDIA driver installs.
const nvmlDefault = "libnvidia-ml.so.1"

func loadLibrary(path string) (uintptr, error) {
	return purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
}

func symbol(h uintptr, name string) (uintptr, error) { return purego.Dlsym(h, name) }
