//go:build linux && !wayland && cgo

package app

/*
#cgo LDFLAGS: -lX11
#include <X11/Xlib.h>

static int llamatrayXFD(void *d) { return ConnectionNumber((Display *)d); }
static int llamatrayXPending(void *d) { return XPending((Display *)d); }
*/
import "C"

import (
	"unsafe"

	"github.com/go-gl/glfw/v3.3/glfw"
)

// xConnection is the X connection GLFW opened for Fyne's loop, or noX: before GLFW is
// initialised and after it has ended (Fyne's loop is over, and a park runs on another goroutine).
func xConnection() (x xConn) {
	defer func() {
		if recover() != nil { // GLFW reports an error by panicking: no X display
			x = noX
		}
	}()
	d := unsafe.Pointer(glfw.GetX11Display())
	if d == nil {
		return noX
	}
	// XPending flushes what GLFW queued for the server and reads what came: events Xlib already
	// holds are then not waited for on the socket.
	return xConn{fd: int(C.llamatrayXFD(d)), pending: func() bool { return C.llamatrayXPending(d) > 0 }}
}
