package releases

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"time"
)

// Detect looks at this machine: the CUDA version of the NVIDIA driver (from nvidia-smi's header), an
// AMD GPU with ROCm, a Vulkan loader. It never fails; what it cannot tell is left out.
func Detect(ctx context.Context) System {
	s := System{OS: runtime.GOOS, Arch: runtime.GOARCH}
	if s.OS == "darwin" {
		return s // Metal is in the macOS build itself
	}
	s.CUDA = nvidiaCUDA(ctx)
	s.ROCm = hasROCm()
	s.Vulkan = anyFile(vulkanLoaders())
	return s
}

// cudaRE matches nvidia-smi's header, "| NVIDIA-SMI 570.86   Driver Version: 570.86   CUDA Version: 12.8 |".
var cudaRE = regexp.MustCompile(`CUDA Version:\s*([0-9]+\.[0-9]+)`)

// ParseCUDAVersion returns the CUDA version in nvidia-smi's output, "" when there is none.
func ParseCUDAVersion(out string) string {
	if m := cudaRE.FindStringSubmatch(out); m != nil {
		return m[1]
	}
	return ""
}

func nvidiaCUDA(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "nvidia-smi").Output()
	if err != nil {
		return ""
	}
	return ParseCUDAVersion(string(out))
}

func hasROCm() bool {
	switch runtime.GOOS {
	case "linux":
		return anyFile([]string{"/dev/kfd"}) && anyFile([]string{"/opt/rocm/lib/libamdhip64.so", "/usr/lib/x86_64-linux-gnu/libamdhip64.so.6"})
	case "windows":
		if os.Getenv("HIP_PATH") != "" {
			return true
		}
		m, _ := filepath.Glob(filepath.Join(os.Getenv("SystemRoot"), "System32", "amdhip64*.dll"))
		return len(m) > 0
	}
	return false
}

func vulkanLoaders() []string {
	if runtime.GOOS == "windows" {
		return []string{filepath.Join(os.Getenv("SystemRoot"), "System32", "vulkan-1.dll")}
	}
	return []string{"/usr/lib/x86_64-linux-gnu/libvulkan.so.1", "/usr/lib/aarch64-linux-gnu/libvulkan.so.1",
		"/usr/lib64/libvulkan.so.1", "/usr/lib/libvulkan.so.1", "/usr/local/lib/libvulkan.so.1"}
}

func anyFile(paths []string) bool {
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil {
			return true
		}
	}
	return false
}
