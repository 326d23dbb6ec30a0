// Package neterr tells apart the socket errors Llamatray reports differently, on every system:
// Winsock has error numbers of its own (WSAECONNREFUSED, WSAECONNRESET) that the syscall
// package's portable names do not match on Windows.
package neterr
