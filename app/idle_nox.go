//go:build !(linux && !wayland && cgo)

package app

// xConnection: no X connection to wait on here (other systems, Wayland builds).
func xConnection() xConn { return noX }
