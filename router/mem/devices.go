package mem

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Device is one compute device a llama-server build can use, as `llama-server --list-devices` lists
// it: every backend the binary was built with (CUDA, ROCm, Vulkan, Metal, SYCL, ...), each device
// with its own memory. Per-device budgets start from this list.
type Device struct {
	Name        string // backend and index, as llama-server's --device takes it: CUDA0, Vulkan1, MTL0
	Description string // e.g. "NVIDIA GeForce RTX 4090"
	Total       int64  // bytes
	Free        int64  // bytes, when listed
}

// deviceLine is one device of `llama-server --list-devices`: "  CUDA0: NVIDIA P104-100 (8109 MiB,
// 8020 MiB free)"; some backends print no free figure.
var deviceLine = regexp.MustCompile(`^\s*([A-Za-z][A-Za-z_]*\d+):\s+(.*?)\s*\((\d+) MiB(?:,\s*(\d+) MiB free)?\)\s*$`)

// ParseListDevices reads the output of `llama-server --list-devices`. Lines that are not devices
// (the "Available devices:" header, "(none)", backend load messages) are skipped.
func ParseListDevices(b []byte) []Device {
	var out []Device
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		m := deviceLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		total, err := strconv.ParseInt(m[3], 10, 64)
		if err != nil {
			continue
		}
		d := Device{Name: m[1], Description: m[2], Total: total << 20}
		if m[4] != "" {
			if free, err := strconv.ParseInt(m[4], 10, 64); err == nil {
				d.Free = free << 20
			}
		}
		out = append(out, d)
	}
	return out
}

// ListDevices runs `binary --list-devices` and parses what it prints. A build with no GPU backend
// lists none.
func ListDevices(ctx context.Context, binary string) ([]Device, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	b, err := exec.CommandContext(ctx, binary, "--list-devices").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("%s --list-devices: %w", binary, err)
	}
	return ParseListDevices(b), nil
}

// AMDGPUs reads the VRAM of AMD GPUs from the amdgpu driver's sysfs files under root
// (/sys/class/drm): card*/device/mem_info_vram_total and mem_info_vram_used, in bytes. Cards without
// them (other drivers, connectors such as card0-DP-1) are skipped.
func AMDGPUs(root string) []GPU {
	cards, _ := filepath.Glob(filepath.Join(root, "card*"))
	sort.Strings(cards)
	var out []GPU
	for _, card := range cards {
		if strings.Contains(filepath.Base(card), "-") {
			continue
		}
		dev := filepath.Join(card, "device")
		total, err1 := readInt(filepath.Join(dev, "mem_info_vram_total"))
		used, err2 := readInt(filepath.Join(dev, "mem_info_vram_used"))
		if err1 != nil || err2 != nil || total <= 0 {
			continue
		}
		name := "AMD GPU " + filepath.Base(card)
		if b, err := os.ReadFile(filepath.Join(dev, "product_name")); err == nil && strings.TrimSpace(string(b)) != "" {
			name = strings.TrimSpace(string(b))
		}
		out = append(out, GPU{Name: name, Total: total, Free: max(total-used, 0)})
	}
	return out
}

func readInt(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return n, nil
}
