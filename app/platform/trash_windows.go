//go:build windows

package platform

import (
	"fmt"
	"path/filepath"
	"unsafe"

	"golang.org/x/sys/windows"
)

// shFileOpStruct is SHFILEOPSTRUCTW (natural alignment, as on 64-bit Windows).
type shFileOpStruct struct {
	hwnd                  uintptr
	wFunc                 uint32
	pFrom                 *uint16
	pTo                   *uint16
	fFlags                uint16
	fAnyOperationsAborted int32
	hNameMappings         uintptr
	lpszProgressTitle     *uint16
}

const (
	foDelete          = 0x3
	fofSilent         = 0x4
	fofNoConfirmation = 0x10
	fofAllowUndo      = 0x40
	fofNoErrorUI      = 0x400
)

var procSHFileOperationW = windows.NewLazySystemDLL("shell32.dll").NewProc("SHFileOperationW")

// MoveToTrash moves a file to the Recycle Bin.
func MoveToTrash(path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("move %s to the Recycle Bin: %w", path, err)
	}
	// pFrom is a list of paths, each NUL-terminated, ending with an extra NUL.
	from, err := windows.UTF16FromString(abs)
	if err != nil {
		return fmt.Errorf("move %s to the Recycle Bin: %w", path, err)
	}
	from = append(from, 0)
	op := shFileOpStruct{
		wFunc:  foDelete,
		pFrom:  &from[0],
		fFlags: fofAllowUndo | fofNoConfirmation | fofSilent | fofNoErrorUI,
	}
	r, _, _ := procSHFileOperationW.Call(uintptr(unsafe.Pointer(&op)))
	if r != 0 {
		return fmt.Errorf("move %s to the Recycle Bin: SHFileOperation error 0x%x", path, r)
	}
	if op.fAnyOperationsAborted != 0 {
		return fmt.Errorf("move %s to the Recycle Bin: cancelled", path)
	}
	return nil
}
