//go:build windows

package cli

import (
	"log"
	"os"

	"golang.org/x/sys/windows"
)

// attachParentProcess is AttachConsole's ATTACH_PARENT_PROCESS, (DWORD)-1.
const attachParentProcess = ^uintptr(0)

var procAttachConsole = windows.NewLazySystemDLL("kernel32.dll").NewProc("AttachConsole")

// attachConsole makes a command typed in cmd.exe or PowerShell print there. llamatray.exe is a
// GUI-subsystem program (-H windowsgui, so that the tray app opens no console window), and Windows
// gives such a program no console and, unless they are redirected, no standard handles: without
// this, `llamatray ps` would print nothing. It attaches to the parent's console and opens CONOUT$
// and CONIN$ for each standard handle that is not already valid, so that a redirection
// (`llamatray ps > ps.txt`, a pipe) keeps its file. Started without a console (from Explorer, a
// shortcut, a service), it changes nothing. Main calls it for commands only, never for the tray app.
func attachConsole() {
	in, out, errOut := validStd(windows.STD_INPUT_HANDLE), validStd(windows.STD_OUTPUT_HANDLE), validStd(windows.STD_ERROR_HANDLE)
	if in && out && errOut {
		return
	}
	if r, _, _ := procAttachConsole.Call(attachParentProcess); r == 0 {
		return // no parent console (or one attached already, which would have given valid handles)
	}
	if !out {
		os.Stdout = openConsole(os.Stdout, "CONOUT$", windows.STD_OUTPUT_HANDLE, "/dev/stdout")
	}
	if !errOut {
		os.Stderr = openConsole(os.Stderr, "CONOUT$", windows.STD_ERROR_HANDLE, "/dev/stderr")
		log.SetOutput(os.Stderr) // the standard logger took the old os.Stderr when the program started
	}
	if !in {
		os.Stdin = openConsole(os.Stdin, "CONIN$", windows.STD_INPUT_HANDLE, "/dev/stdin")
	}
}

// validStd reports whether standard handle std is open: a console, file or pipe.
func validStd(std uint32) bool {
	h, err := windows.GetStdHandle(std)
	if err != nil || h == 0 || h == windows.InvalidHandle {
		return false
	}
	t, err := windows.GetFileType(h)
	return err == nil && t != windows.FILE_TYPE_UNKNOWN
}

// openConsole opens the console device name (CONOUT$ or CONIN$) as standard handle std, and
// returns it as a file; on failure it returns old.
func openConsole(old *os.File, name string, std uint32, fileName string) *os.File {
	p, err := windows.UTF16PtrFromString(name)
	if err != nil {
		return old
	}
	h, err := windows.CreateFile(p, windows.GENERIC_READ|windows.GENERIC_WRITE, windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE,
		nil, windows.OPEN_EXISTING, 0, 0)
	if err != nil {
		return old
	}
	_ = windows.SetStdHandle(std, h) // for children that inherit the standard handles
	return os.NewFile(uintptr(h), fileName)
}
