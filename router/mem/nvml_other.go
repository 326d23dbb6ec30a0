//go:build !linux && !windows

package mem

import "errors"

// nvmlDefault: NVIDIA's NVML is not on this system (macOS has no NVIDIA driver).
const nvmlDefault = ""

type nvmlLib struct{}

func openNVML(string) (*nvmlLib, error) {
	return nil, errors.New("NVML is not available on this system")
}

func (*nvmlLib) gpus() ([]GPU, error) { return nil, errors.New("NVML is not available on this system") }

func (*nvmlLib) close() {}
