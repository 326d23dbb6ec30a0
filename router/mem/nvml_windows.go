package mem

import "syscall"

// nvmlDefault is the NVML library the NVIDIA driver installs (in System32).
const nvmlDefault = "nvml.dll"

func loadLibrary(path string) (uintptr, error) {
	h, err := syscall.LoadLibrary(path)
	return uintptr(h), err
}

func symbol(h uintptr, name string) (uintptr, error) {
	return syscall.GetProcAddress(syscall.Handle(h), name)
}
