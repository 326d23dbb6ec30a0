package mem

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// On Apple silicon the GPU uses system RAM.
var unifiedMemory = runtime.GOARCH == "arm64"

// unifiedGPUs is Apple silicon's GPU as the scheduler sees it: llama-server's MTL0, which may hold
// at most the Metal working-set limit (iogpu.wired_limit_mb when set, else macOS's default share of
// RAM). Intel Macs list none here.
func unifiedGPUs(ram int64) []GPU {
	if !unifiedMemory {
		return nil
	}
	wired, err := unix.SysctlUint32("iogpu.wired_limit_mb")
	if err != nil {
		wired = 0
	}
	ws := MetalWorkingSet(ram, int64(wired))
	return []GPU{{Name: "Apple GPU", Device: "MTL0", Total: ws, Free: ws}}
}
