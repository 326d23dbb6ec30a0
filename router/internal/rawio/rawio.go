// Package rawio reads and writes the router's busiest descriptors (the proxy's sockets, a child's
// log pipe) without telling the Go scheduler that a system call is under way. Such a descriptor is
// non-blocking, so its read or write never waits in the kernel: it copies what there is, or says
// EAGAIN and the caller waits in the network poller (a socket) or in poll(2) (the log pipe). Made
// through the syscall package's ordinary entry, each such call would first check whether the
// runtime's monitor thread (sysmon) is asleep and wake it. In a proxy whose every request leaves
// all processors idle while llama-server computes, the monitor is asleep at a request's first
// system call, and once woken it polls every 20 µs for a millisecond or more before it sleeps
// again: measured under perf, a fifth of the router's CPU at eight clients. A raw system call
// leaves it asleep.
//
// Wrap and ReadNow do that on Linux. Elsewhere, for a connection that has no file descriptor, and
// in a build with the race detector, they use the ordinary calls: the detector learns that what one
// goroutine wrote to a socket happens before what another read from one through the syscall
// package's own calls, and would report races that are not there. A wrapped connection's
// deadlines, Close and every other method behave as the connection's own: waits go through the
// same poller.
package rawio

import "net"

// Wrap returns c reading and writing with raw system calls where this build allows it (Enabled).
func Wrap(c net.Conn) net.Conn { return wrap(c) }
