package platform

import (
	"errors"
	"os/exec"
	"runtime"
)

// ErrNoReveal says the platform has no way to select a file in its file manager; the caller opens
// the folder instead.
var ErrNoReveal = errors.New("cannot select a file in the file manager here")

// RevealFile shows path selected in the system file manager (Finder, Explorer).
func RevealFile(path string) error {
	var cmd *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		cmd = exec.Command("open", "-R", path)
	case "windows":
		cmd = exec.Command("explorer", "/select,"+path)
	default:
		return ErrNoReveal
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	go cmd.Wait() // reap it; explorer exits non-zero even on success
	return nil
}

// TrashName is what the platform calls its trash.
func TrashName() string {
	if runtime.GOOS == "windows" {
		return "Recycle Bin"
	}
	return "Trash"
}
