package releases

import (
	"errors"
	"strings"
	"testing"
)

// assetsOf names the assets of a release as llama.cpp's release workflow publishes them
// (.github/workflows/release.yml: the .tar.gz builds of Linux and macOS, the .zip builds of Windows
// with their CUDA runtime archives, the XCFramework and the web UI).
func assetsOf(tag string, names ...string) []Asset {
	var out []Asset
	for _, n := range names {
		n = strings.ReplaceAll(n, "TAG", tag)
		out = append(out, Asset{Name: n, Size: 1, Digest: "sha256:00"})
	}
	return out
}

// current is a release of late 2026.
var current = assetsOf("b7100",
	"cudart-llama-bin-win-cuda-12.4-x64.zip",
	"cudart-llama-bin-win-cuda-13.3-x64.zip",
	"llama-TAG-bin-android-arm64.tar.gz",
	"llama-TAG-bin-macos-arm64.tar.gz",
	"llama-TAG-bin-macos-x64.tar.gz",
	"llama-TAG-bin-ubuntu-arm64.tar.gz",
	"llama-TAG-bin-ubuntu-openvino-2026.0-x64.tar.gz",
	"llama-TAG-bin-ubuntu-rocm-7.2-x64.tar.gz",
	"llama-TAG-bin-ubuntu-s390x.tar.gz",
	"llama-TAG-bin-ubuntu-vulkan-arm64.tar.gz",
	"llama-TAG-bin-ubuntu-vulkan-x64.tar.gz",
	"llama-TAG-bin-ubuntu-x64.tar.gz",
	"llama-TAG-bin-win-cpu-arm64.zip",
	"llama-TAG-bin-win-cpu-x64.zip",
	"llama-TAG-bin-win-cuda-12.4-x64.zip",
	"llama-TAG-bin-win-cuda-13.3-x64.zip",
	"llama-TAG-bin-win-hip-radeon-x64.zip",
	"llama-TAG-bin-win-opencl-adreno-arm64.zip",
	"llama-TAG-bin-win-vulkan-x64.zip",
	"llama-TAG-ui.tar.gz",
	"llama-TAG-xcframework.zip",
)

// older is a release of mid 2025, when every archive was a .zip.
var older = assetsOf("b6000",
	"cudart-llama-bin-win-cuda-12.4-x64.zip",
	"llama-TAG-bin-macos-arm64.zip",
	"llama-TAG-bin-macos-x64.zip",
	"llama-TAG-bin-ubuntu-vulkan-x64.zip",
	"llama-TAG-bin-ubuntu-x64.zip",
	"llama-TAG-bin-win-cpu-arm64.zip",
	"llama-TAG-bin-win-cpu-x64.zip",
	"llama-TAG-bin-win-cuda-12.4-x64.zip",
	"llama-TAG-bin-win-hip-radeon-x64.zip",
	"llama-TAG-bin-win-sycl-x64.zip",
	"llama-TAG-bin-win-vulkan-x64.zip",
	"llama-TAG-xcframework.zip",
)

// linuxCUDA has the Linux CUDA builds llama.cpp began to publish in 2026.
var linuxCUDA = assetsOf("b8200",
	"llama-TAG-bin-ubuntu-cuda-12.8-x64.tar.gz",
	"llama-TAG-bin-ubuntu-cuda-13.1-x64.tar.gz",
	"llama-TAG-bin-ubuntu-vulkan-x64.tar.gz",
	"llama-TAG-bin-ubuntu-x64.tar.gz",
)

func TestPick(t *testing.T) {
	tests := []struct {
		name       string
		assets     []Asset
		sys        System
		want       Want
		asset      string
		extras     []string
		reason     string // a word the reason must contain
		err        error
		backend    string
		otherCount int
	}{
		{name: "linux cpu", assets: current, sys: System{OS: "linux", Arch: "amd64"},
			asset: "llama-b7100-bin-ubuntu-x64.tar.gz", reason: "no GPU runtime", backend: BackendCPU, otherCount: 3},
		{name: "linux vulkan loader", assets: current, sys: System{OS: "linux", Arch: "amd64", Vulkan: true},
			asset: "llama-b7100-bin-ubuntu-vulkan-x64.tar.gz", reason: "Vulkan", backend: BackendVulkan},
		{name: "linux nvidia without a linux cuda build uses vulkan", assets: current, sys: System{OS: "linux", Arch: "amd64", CUDA: "12.8"},
			asset: "llama-b7100-bin-ubuntu-vulkan-x64.tar.gz", reason: "no CUDA build"},
		{name: "linux amd rocm", assets: current, sys: System{OS: "linux", Arch: "amd64", ROCm: true, Vulkan: true},
			asset: "llama-b7100-bin-ubuntu-rocm-7.2-x64.tar.gz", reason: "ROCm", backend: BackendROCm},
		{name: "linux arm64", assets: current, sys: System{OS: "linux", Arch: "arm64"},
			asset: "llama-b7100-bin-ubuntu-arm64.tar.gz"},
		{name: "linux arm64 rocm without a rocm build uses vulkan", assets: current, sys: System{OS: "linux", Arch: "arm64", ROCm: true},
			asset: "llama-b7100-bin-ubuntu-vulkan-arm64.tar.gz", reason: "no ROCm build"},
		{name: "linux cuda newest the driver runs", assets: linuxCUDA, sys: System{OS: "linux", Arch: "amd64", CUDA: "13.0"},
			asset: "llama-b8200-bin-ubuntu-cuda-12.8-x64.tar.gz", reason: "CUDA 13.0", backend: BackendCUDA},
		{name: "linux cuda 13", assets: linuxCUDA, sys: System{OS: "linux", Arch: "amd64", CUDA: "13.2"},
			asset: "llama-b8200-bin-ubuntu-cuda-13.1-x64.tar.gz"},
		{name: "linux old driver skips cuda", assets: linuxCUDA, sys: System{OS: "linux", Arch: "amd64", CUDA: "11.8"},
			asset: "llama-b8200-bin-ubuntu-vulkan-x64.tar.gz", reason: "newer driver"},
		{name: "mac arm64 metal", assets: current, sys: System{OS: "darwin", Arch: "arm64"},
			asset: "llama-b7100-bin-macos-arm64.tar.gz", reason: "Metal", backend: BackendMetal},
		{name: "mac intel", assets: current, sys: System{OS: "darwin", Arch: "amd64"},
			asset: "llama-b7100-bin-macos-x64.tar.gz", backend: BackendCPU},
		{name: "mac older zip", assets: older, sys: System{OS: "darwin", Arch: "arm64"},
			asset: "llama-b6000-bin-macos-arm64.zip"},
		{name: "windows cuda 12 driver", assets: current, sys: System{OS: "windows", Arch: "amd64", CUDA: "12.9", Vulkan: true},
			asset: "llama-b7100-bin-win-cuda-12.4-x64.zip", extras: []string{"cudart-llama-bin-win-cuda-12.4-x64.zip"}, reason: "CUDA 12.9"},
		{name: "windows cuda 13 driver", assets: current, sys: System{OS: "windows", Arch: "amd64", CUDA: "13.3"},
			asset: "llama-b7100-bin-win-cuda-13.3-x64.zip", extras: []string{"cudart-llama-bin-win-cuda-13.3-x64.zip"}},
		{name: "windows amd hip", assets: current, sys: System{OS: "windows", Arch: "amd64", ROCm: true},
			asset: "llama-b7100-bin-win-hip-radeon-x64.zip", backend: BackendHIP},
		{name: "windows vulkan", assets: current, sys: System{OS: "windows", Arch: "amd64", Vulkan: true},
			asset: "llama-b7100-bin-win-vulkan-x64.zip"},
		{name: "windows cpu", assets: current, sys: System{OS: "windows", Arch: "amd64"},
			asset: "llama-b7100-bin-win-cpu-x64.zip"},
		{name: "windows arm64 skips opencl", assets: current, sys: System{OS: "windows", Arch: "arm64", Vulkan: true},
			asset: "llama-b7100-bin-win-cpu-arm64.zip"},
		{name: "older linux zip", assets: older, sys: System{OS: "linux", Arch: "amd64"},
			asset: "llama-b6000-bin-ubuntu-x64.zip"},
		{name: "user picks vulkan", assets: current, sys: System{OS: "linux", Arch: "amd64"}, want: Want{Backend: "Vulkan"},
			asset: "llama-b7100-bin-ubuntu-vulkan-x64.tar.gz", reason: "asked"},
		{name: "user picks cuda the driver may not run", assets: current, sys: System{OS: "windows", Arch: "amd64", CUDA: "12.2"}, want: Want{Backend: "cuda"},
			asset: "llama-b7100-bin-win-cuda-13.3-x64.zip", extras: []string{"cudart-llama-bin-win-cuda-13.3-x64.zip"}, reason: "may not run"},
		{name: "user picks an asset", assets: current, sys: System{OS: "linux", Arch: "amd64"}, want: Want{Asset: "llama-b7100-bin-ubuntu-openvino-2026.0-x64.tar.gz"},
			asset: "llama-b7100-bin-ubuntu-openvino-2026.0-x64.tar.gz", backend: BackendOpenVINO},
		{name: "asset of another system", assets: current, sys: System{OS: "linux", Arch: "amd64"}, want: Want{Asset: "llama-b7100-bin-win-cpu-x64.zip"}, err: ErrNoBuild},
		{name: "no such backend", assets: current, sys: System{OS: "darwin", Arch: "arm64"}, want: Want{Backend: "cuda"}, err: ErrNoBuild},
		{name: "no build for the system", assets: current, sys: System{OS: "freebsd", Arch: "amd64"}, err: ErrNoBuild},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Pick(tt.assets, tt.sys, tt.want)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("err = %v, want %v", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Asset.Name != tt.asset {
				t.Errorf("asset = %s, want %s (reason %q)", c.Asset.Name, tt.asset, c.Reason)
			}
			var extras []string
			for _, e := range c.Extras {
				extras = append(extras, e.Name)
			}
			if strings.Join(extras, ",") != strings.Join(tt.extras, ",") {
				t.Errorf("extras = %v, want %v", extras, tt.extras)
			}
			if !strings.Contains(c.Reason, tt.reason) {
				t.Errorf("reason %q does not say %q", c.Reason, tt.reason)
			}
			if tt.backend != "" && c.Backend != tt.backend {
				t.Errorf("backend = %s, want %s", c.Backend, tt.backend)
			}
			if tt.otherCount > 0 && len(c.Others) != tt.otherCount {
				t.Errorf("others = %v, want %d", names(c.Others), tt.otherCount)
			}
			for _, o := range c.Others {
				if o.Asset.Name == c.Asset.Name || o.OS != tt.sys.OS || o.Arch != tt.sys.Arch {
					t.Errorf("other %s is not an alternative for %s/%s", o.Asset.Name, tt.sys.OS, tt.sys.Arch)
				}
			}
		})
	}
}

func TestParseAsset(t *testing.T) {
	tests := map[string]Flavor{
		"llama-b7100-bin-win-cuda-12.4-x64.zip":             {OS: "windows", Arch: "amd64", Backend: BackendCUDA, Version: "12.4"},
		"llama-b7100-bin-ubuntu-rocm-7.2-x64.tar.gz":        {OS: "linux", Arch: "amd64", Backend: BackendROCm, Version: "7.2"},
		"llama-b7100-bin-win-hip-radeon-x64.zip":            {OS: "windows", Arch: "amd64", Backend: BackendHIP, Variant: "radeon"},
		"llama-b7100-bin-macos-arm64.tar.gz":                {OS: "darwin", Arch: "arm64", Backend: BackendMetal},
		"llama-b7100-bin-ubuntu-s390x.tar.gz":               {OS: "linux", Arch: "s390x", Backend: BackendCPU},
		"llama-b7100-bin-ubuntu-openvino-2026.0-x64.tar.gz": {OS: "linux", Arch: "amd64", Backend: BackendOpenVINO, Version: "2026.0"},
		"llama-b3000-bin-win-avx2-x64.zip":                  {OS: "windows", Arch: "amd64", Backend: BackendCPU, Variant: "avx2"},
		"llama-b3000-bin-win-cuda-cu12.2.0-x64.zip":         {OS: "windows", Arch: "amd64", Backend: BackendCUDA, Version: "12.2.0"},
		"llama-b7100-bin-ubuntu-sycl-fp32-x64.tar.gz":       {OS: "linux", Arch: "amd64", Backend: BackendSYCL, Variant: "fp32"},
	}
	for name, want := range tests {
		f, ok := ParseAsset(Asset{Name: name})
		want.Asset = Asset{Name: name}
		if !ok || f != want {
			t.Errorf("ParseAsset(%s) = %+v, %v; want %+v", name, f, ok, want)
		}
	}
	for _, name := range []string{"cudart-llama-bin-win-cuda-12.4-x64.zip", "llama-b7100-xcframework.zip", "llama-b7100-ui.tar.gz",
		"llama-b7100-bin-910b-openEuler-x86-aclgraph.tar.gz", "llama-b7100-bin-ubuntu-x64.deb", "source.zip"} {
		if f, ok := ParseAsset(Asset{Name: name}); ok {
			t.Errorf("ParseAsset(%s) = %+v, want not a build", name, f)
		}
	}
}

func TestCompareVersions(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{{"12.4", "12.10", -1}, {"13.0", "12.9", 1}, {"12.4", "12.4", 0}, {"", "1", -1}, {"12.4", "12.4.0", 0}} {
		if got := compareVersions(c.a, c.b); got != c.want {
			t.Errorf("compareVersions(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

func TestParseCUDAVersion(t *testing.T) {
	out := "+-----------------------------------------------------------------------------------------+\n" +
		"| NVIDIA-SMI 570.86.15              Driver Version: 570.86.15      CUDA Version: 12.8     |\n"
	if v := ParseCUDAVersion(out); v != "12.8" {
		t.Errorf("ParseCUDAVersion = %q", v)
	}
	if v := ParseCUDAVersion("NVIDIA-SMI has failed"); v != "" {
		t.Errorf("ParseCUDAVersion = %q, want none", v)
	}
}
