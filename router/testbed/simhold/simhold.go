// Package simhold books what processes hold on a simulated machine (mem.Sim, envconfig.SimMachine):
// the fake llama-server its own buffers, a test what other programs take. The probe reads the
// bookings (mem.SimHoldings); only tests and the fake write them.
package simhold

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/llamatray/llamatray/router/atomicfile"
	"github.com/llamatray/llamatray/router/mem"
)

// Hold books h for pid on the machine described at path (replacing what it held).
func Hold(path string, pid int, h mem.SimHolding) error {
	dir := mem.SimHeldDir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("simulated machine: %w", err)
	}
	b, err := json.Marshal(h)
	if err != nil {
		return fmt.Errorf("simulated machine: %w", err)
	}
	name := filepath.Join(dir, strconv.Itoa(pid)+".json")
	if err := atomicfile.Write(name, b, 0o644); err != nil {
		return fmt.Errorf("simulated machine: %w", err)
	}
	return nil
}

// Release drops what pid held.
func Release(path string, pid int) {
	os.Remove(filepath.Join(mem.SimHeldDir(path), strconv.Itoa(pid)+".json"))
}

// Other books what other programs hold on the machine (memory pressure); a zero holding clears it.
func Other(path string, h mem.SimHolding) error {
	if err := os.MkdirAll(mem.SimHeldDir(path), 0o755); err != nil {
		return fmt.Errorf("simulated machine: %w", err)
	}
	b, _ := json.Marshal(h)
	return os.WriteFile(filepath.Join(mem.SimHeldDir(path), "other.json"), b, 0o644)
}
