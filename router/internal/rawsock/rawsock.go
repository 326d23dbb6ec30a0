// Package rawsock reads and writes the proxy's sockets without telling the Go scheduler that a
// system call is under way. A socket the network poller owns is non-blocking, so its read or
// write never waits in the kernel: it copies what there is, or says EAGAIN and the poller waits.
// Made through the syscall package's ordinary entry, each such call would first check whether the
// runtime's monitor thread (sysmon) is asleep and wake it. In a proxy whose every request leaves
// all processors idle while llama-server computes, the monitor is asleep at each request's first
// system call, and once woken it polls every 20 µs for a millisecond or more before it sleeps
// again: measured here, a fifth to a quarter of the router's CPU. A raw system call leaves it
// asleep.
//
// Wrap gives that connection on Linux. Elsewhere, for a connection that has no file descriptor,
// and in a build with the race detector, it gives the connection back unchanged: the detector
// learns that what one goroutine wrote to a socket happens before what another read from one
// through the syscall package's own calls, and would report races that are not there. Deadlines,
// Close and every other method behave as the wrapped connection's: waits go through the same
// poller.
package rawsock

import "net"

// Wrap returns c reading and writing with raw system calls where this build allows it (Enabled).
func Wrap(c net.Conn) net.Conn { return wrap(c) }
