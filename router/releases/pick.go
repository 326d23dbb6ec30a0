package releases

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Backends of llama.cpp's builds (Flavor.Backend).
const (
	BackendCPU      = "cpu"
	BackendMetal    = "metal" // the macOS arm64 build: CPU and Apple GPU through Metal
	BackendCUDA     = "cuda"
	BackendVulkan   = "vulkan"
	BackendROCm     = "rocm" // Linux ROCm builds
	BackendHIP      = "hip"  // Windows HIP (ROCm) builds
	BackendSYCL     = "sycl"
	BackendOpenVINO = "openvino"
	BackendOpenCL   = "opencl"
)

// Flavor is what an asset's name says about the build in it.
type Flavor struct {
	Asset   Asset
	OS      string // GOOS spelling: linux, darwin, windows, android
	Arch    string // GOARCH spelling: amd64, arm64, s390x
	Backend string // one of the Backend constants, or another word llama.cpp uses
	Version string // the backend's version when named: "12.4" for CUDA, "7.2" for ROCm
	Variant string // any other word: "radeon", "adreno", "fp32", "avx2"
}

// Label is a short human name: "CUDA 12.4", "Vulkan", "CPU".
func (f Flavor) Label() string {
	name := map[string]string{BackendCPU: "CPU", BackendMetal: "Metal", BackendCUDA: "CUDA", BackendVulkan: "Vulkan",
		BackendROCm: "ROCm", BackendHIP: "HIP", BackendSYCL: "SYCL", BackendOpenVINO: "OpenVINO", BackendOpenCL: "OpenCL"}[f.Backend]
	return strings.Join(strings.Fields(cmp.Or(name, f.Backend)+" "+f.Version+" "+f.Variant), " ")
}

var (
	osWords   = map[string]string{"ubuntu": "linux", "linux": "linux", "macos": "darwin", "win": "windows", "android": "android"}
	archWords = map[string]string{"x64": "amd64", "arm64": "arm64", "s390x": "s390x"}
	// oldCPU are the CPU variants of older Windows releases (llama-b3000-bin-win-avx2-x64.zip).
	oldCPU = map[string]bool{"avx": true, "avx2": true, "avx512": true, "noavx": true, "openblas": true}
)

// archiveExt returns the archive extension of name (".zip", ".tar.gz"), "" when it is neither.
func archiveExt(name string) string {
	for _, ext := range []string{".tar.gz", ".tgz", ".zip"} {
		if strings.HasSuffix(strings.ToLower(name), ext) {
			return ext
		}
	}
	return ""
}

// ParseAsset reads a build asset's name, "llama-<build>-bin-<os>[-<backend>[-<version>|-<variant>]]-<arch>"
// followed by .zip or .tar.gz. Anything else (the CUDA runtime archives, the XCFramework, the web UI, the
// source) reports false.
func ParseAsset(a Asset) (Flavor, bool) {
	ext := archiveExt(a.Name)
	if ext == "" || !strings.HasPrefix(a.Name, "llama-") {
		return Flavor{}, false
	}
	_, rest, ok := strings.Cut(strings.TrimSuffix(a.Name[:len(a.Name)-len(ext)], "."), "-bin-")
	if !ok {
		return Flavor{}, false
	}
	words := strings.Split(rest, "-")
	if len(words) < 2 {
		return Flavor{}, false
	}
	f := Flavor{Asset: a, OS: osWords[words[0]], Arch: archWords[words[len(words)-1]]}
	if f.OS == "" || f.Arch == "" {
		return Flavor{}, false
	}
	mid := words[1 : len(words)-1]
	switch {
	case len(mid) == 0 && f.OS == "darwin" && f.Arch == "arm64":
		f.Backend = BackendMetal
	case len(mid) == 0:
		f.Backend = BackendCPU
	case oldCPU[mid[0]]:
		f.Backend, f.Variant = BackendCPU, mid[0]
		mid = nil
	default:
		f.Backend, mid = mid[0], mid[1:]
	}
	for _, w := range mid {
		if v := strings.TrimPrefix(w, "cu"); v != "" && v[0] >= '0' && v[0] <= '9' && f.Version == "" {
			f.Version = v
		} else if f.Variant == "" {
			f.Variant = w
		} else {
			f.Variant += "-" + w
		}
	}
	return f, true
}

// System is what Pick needs to know about this machine.
type System struct {
	OS, Arch string // GOOS and GOARCH
	CUDA     string // the highest CUDA version the NVIDIA driver supports ("12.8"), "" without one
	ROCm     bool   // an AMD GPU with the ROCm / HIP runtime
	Vulkan   bool   // a Vulkan loader is installed
}

// Want is what the user asked for; the zero value lets Pick choose.
type Want struct {
	Backend string // "cpu", "cuda", "vulkan", "rocm", "hip", "metal", ... ("" = choose)
	Asset   string // an exact asset name; wins over Backend
}

// Choice is the build Pick chose.
type Choice struct {
	Flavor
	Extras []Asset // more archives unpacked into the same folder: the CUDA runtime of Windows CUDA builds
	Reason string  // why this one, in a sentence
	Others []Flavor
}

// ErrNoBuild is matched by Pick's error when the release has no build for this system.
var ErrNoBuild = errors.New("no llama.cpp build for this system")

// Pick chooses the asset of a release for sys: the build asked for in want, else the macOS build
// (with Metal on Apple silicon), else a CUDA build the NVIDIA driver can run (the newest such), else
// ROCm/HIP, else Vulkan, else the CPU build. Others lists the other builds that run on sys's OS and
// architecture, so the user can pick one of them instead. Pick is a pure function.
func Pick(assets []Asset, sys System, want Want) (Choice, error) {
	var here []Flavor
	for _, a := range assets {
		if f, ok := ParseAsset(a); ok && f.OS == sys.OS && f.Arch == sys.Arch {
			here = append(here, f)
		}
	}
	if want.Asset != "" {
		i := slices.IndexFunc(here, func(f Flavor) bool { return f.Asset.Name == want.Asset })
		if i < 0 {
			return Choice{}, fmt.Errorf("%w: no asset %q for %s/%s (builds: %s)", ErrNoBuild, want.Asset, sys.OS, sys.Arch, names(here))
		}
		return choice(assets, here, here[i], "asked for by name"), nil
	}
	if len(here) == 0 {
		return Choice{}, fmt.Errorf("%w: %s/%s", ErrNoBuild, sys.OS, sys.Arch)
	}
	f, reason, err := pickFor(here, sys, want.Backend)
	if err != nil {
		return Choice{}, err
	}
	return choice(assets, here, f, reason), nil
}

// pickBackend picks of the builds here the best of the backend asked for: for CUDA, the newest
// the driver runs, if any.
func pickBackend(here []Flavor, sys System, backend string) (Flavor, string, error) {
	b := strings.ToLower(backend)
	of := filter(here, byBackend(b))
	if len(of) == 0 {
		return Flavor{}, "", fmt.Errorf("%w: no %s build for %s/%s (builds: %s)", ErrNoBuild, backend, sys.OS, sys.Arch, names(here))
	}
	if b != BackendCUDA {
		return best(of), "asked for", nil
	}
	if ok := filter(of, func(f Flavor) bool { return cudaRuns(f.Version, sys.CUDA) }); len(ok) > 0 {
		return best(ok), "asked for", nil
	}
	return best(of), "asked for; the driver supports CUDA " + cmp.Or(sys.CUDA, "none") + ", so it may not run", nil
}

// pickFor picks of the builds here the one of the backend asked for (pickBackend), else the one for
// what the system has, and says why: Metal on a Mac, else CUDA the driver runs, ROCm, Vulkan when
// there is a GPU runtime, else the CPU build.
func pickFor(here []Flavor, sys System, backend string) (Flavor, string, error) {
	if backend != "" {
		return pickBackend(here, sys, backend)
	}
	if sys.OS == "darwin" {
		if of := filter(here, byBackend(BackendMetal)); len(of) > 0 {
			return best(of), "the Apple silicon build runs on the GPU through Metal", nil
		}
	}
	var skipped []string
	if sys.CUDA != "" {
		cuda := filter(here, byBackend(BackendCUDA))
		if ok := filter(cuda, func(f Flavor) bool { return cudaRuns(f.Version, sys.CUDA) }); len(ok) > 0 {
			return best(ok), fmt.Sprintf("the NVIDIA driver supports CUDA %s; this is the newest CUDA build it runs", sys.CUDA), nil
		}
		if len(cuda) > 0 {
			skipped = append(skipped, fmt.Sprintf("the CUDA builds need a newer driver than one for CUDA %s", sys.CUDA))
		} else {
			skipped = append(skipped, "this release has no CUDA build for "+sys.OS+"/"+sys.Arch)
		}
	}
	if sys.ROCm {
		if of := filter(here, func(f Flavor) bool { return f.Backend == BackendROCm || f.Backend == BackendHIP }); len(of) > 0 {
			return best(of), "an AMD GPU with ROCm was found", nil
		}
		skipped = append(skipped, "this release has no ROCm build for "+sys.OS+"/"+sys.Arch)
	}
	if sys.Vulkan || sys.CUDA != "" || sys.ROCm {
		if of := filter(here, byBackend(BackendVulkan)); len(of) > 0 {
			why := "a Vulkan loader is installed, so the GPU is used through Vulkan"
			if len(skipped) > 0 {
				why = strings.Join(skipped, "; ") + "; the Vulkan build uses the GPU"
			}
			return best(of), why, nil
		}
	}
	if of := filter(here, byBackend(BackendCPU)); len(of) > 0 {
		why := "no GPU runtime (CUDA, ROCm, Vulkan) was found"
		if len(skipped) > 0 {
			why = strings.Join(skipped, "; ")
		}
		return best(of), "CPU build: " + why, nil
	}
	return Flavor{}, "", fmt.Errorf("%w: %s/%s has only %s builds; pick one with --backend", ErrNoBuild, sys.OS, sys.Arch, names(here))
}

func choice(assets []Asset, here []Flavor, f Flavor, reason string) Choice {
	c := Choice{Flavor: f, Reason: reason}
	for _, o := range here {
		if o.Asset.Name != f.Asset.Name {
			c.Others = append(c.Others, o)
		}
	}
	if f.Backend == BackendCUDA && f.OS == "windows" {
		// llama.cpp publishes the CUDA runtime DLLs of its Windows CUDA builds as a separate archive.
		for _, a := range assets {
			if strings.HasPrefix(a.Name, "cudart-") && archiveExt(a.Name) != "" &&
				strings.Contains(a.Name, "-cuda-"+f.Version+"-") && strings.Contains(a.Name, "-"+f.Asset.Name[strings.LastIndex(f.Asset.Name, "-")+1:]) {
				c.Extras = append(c.Extras, a)
			}
		}
	}
	return c
}

// best returns the preferred flavor of one backend: the newest backend version, then the plain build
// before variants (avx2 before other old CPU variants).
func best(fs []Flavor) Flavor {
	rank := func(f Flavor) int {
		switch f.Variant {
		case "":
			return 0
		case "avx2", "radeon":
			return 1
		}
		return 2
	}
	return slices.MinFunc(fs, func(a, b Flavor) int {
		if c := compareVersions(b.Version, a.Version); c != 0 {
			return c
		}
		return cmp.Compare(rank(a), rank(b))
	})
}

// cudaRuns reports whether a build for CUDA version build runs with a driver supporting driver.
func cudaRuns(build, driver string) bool {
	return driver != "" && build != "" && compareVersions(build, driver) <= 0
}

// compareVersions compares dotted numbers: "12.4" < "12.10" < "13.0"; "" is the smallest.
func compareVersions(a, b string) int {
	switch {
	case a == b:
		return 0
	case a == "":
		return -1
	case b == "":
		return 1
	}
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := range max(len(as), len(bs)) {
		var x, y int
		if i < len(as) {
			x, _ = strconv.Atoi(as[i])
		}
		if i < len(bs) {
			y, _ = strconv.Atoi(bs[i])
		}
		if c := cmp.Compare(x, y); c != 0 {
			return c
		}
	}
	return 0
}

func byBackend(b string) func(Flavor) bool { return func(f Flavor) bool { return f.Backend == b } }

func filter(fs []Flavor, keep func(Flavor) bool) []Flavor {
	return slices.DeleteFunc(slices.Clone(fs), func(f Flavor) bool { return !keep(f) })
}

func names(fs []Flavor) string {
	var s []string
	for _, f := range fs {
		s = append(s, f.Asset.Name)
	}
	return cmp.Or(strings.Join(s, ", "), "none")
}

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
