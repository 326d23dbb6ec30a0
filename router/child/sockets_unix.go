//go:build !windows

package child

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
)

// defaultAddrs serves Specs without their own Addrs: sockets in a folder of this process.
var defaultAddrs = NewSockets()

// NewAddrs returns the addresses children of one engine listen on: on Linux and macOS, unix sockets
// in a private folder (see Sockets). Release them with CloseAddrs.
func NewAddrs() Addrs { return NewSockets() }

// CloseAddrs removes the socket folder of a (from NewAddrs).
func CloseAddrs(a Addrs) error {
	if s, ok := a.(*Sockets); ok {
		return s.Close()
	}
	return nil
}

// maxSocketPath keeps socket paths within sockaddr_un (104 bytes on macOS, 108 on Linux).
const maxSocketPath = 100

// socketSeq numbers the sockets of this process, so that no two children, of any engine, ever get
// the same file name (connection pools key on it, see Addr.URL).
var socketSeq atomic.Int64

// dirPrefix starts the name of every socket folder: "llamatray-sock-<pid>-<random>".
const dirPrefix = "llamatray-sock-"

// Sockets hands out unix socket paths in one folder of mode 0700, created on first use under the
// user's runtime directory ($XDG_RUNTIME_DIR, else the temporary directory), so that only this
// user reaches the children. Close removes the folder. Folders left by a process that was killed
// are removed when the next one is created.
type Sockets struct {
	once   sync.Once              // creates the folder on the first Get (or marks it never made, on Close)
	err    error                  // why the folder could not be made; written inside once
	dir    atomic.Pointer[string] // the folder, once made
	closed atomic.Bool
}

// errSocketsClosed is Get's error after Close.
var errSocketsClosed = errors.New("socket folder closed")

// NewSockets returns a socket folder; nothing is created until the first Get.
func NewSockets() *Sockets { return &Sockets{} }

// Dir returns the folder, or "" before the first Get.
func (s *Sockets) Dir() string {
	if d := s.dir.Load(); d != nil {
		return *d
	}
	return ""
}

// Get returns a new socket path.
func (s *Sockets) Get() (Addr, error) {
	s.once.Do(s.makeFolder)
	if s.closed.Load() {
		return Addr{}, errSocketsClosed
	}
	if s.err != nil {
		return Addr{}, s.err
	}
	path := filepath.Join(s.Dir(), "c"+strconv.FormatInt(socketSeq.Add(1), 10)+".sock")
	if len(path) > maxSocketPath {
		return Addr{}, fmt.Errorf("socket path %s is longer than a unix socket address allows", path)
	}
	return Addr{Socket: path}, nil
}

// Put removes the socket file of a process that has exited.
func (s *Sockets) Put(a Addr) {
	if a.Socket == "" || filepath.Dir(a.Socket) != s.Dir() {
		return
	}
	_ = os.Remove(a.Socket)
}

// Close removes the folder and every socket in it; Get fails from then on.
func (s *Sockets) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.once.Do(func() {}) // a folder being made is finished first; none is made later
	dir := s.Dir()
	if dir == "" {
		return nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove socket folder: %w", err)
	}
	return nil
}

// makeFolder creates the folder, once.
func (s *Sockets) makeFolder() {
	base := runtimeDir()
	if len(base) > maxSocketPath-40 {
		base = "/tmp" // a long $TMPDIR would leave no room for socket names
	}
	removeStale(base)
	dir, err := os.MkdirTemp(base, dirPrefix+strconv.Itoa(os.Getpid())+"-")
	if err == nil {
		err = os.Chmod(dir, 0o700) // MkdirTemp's mode already; explicit, whatever the umask
	}
	if err != nil {
		s.err = fmt.Errorf("create the folder for llama-server sockets in %s: %w", base, err)
		return
	}
	s.dir.Store(&dir)
}

// runtimeDir is $XDG_RUNTIME_DIR when it is an absolute path to a folder, else the temporary
// directory (per user on macOS).
func runtimeDir() string {
	if d := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(d) {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			return d
		}
	}
	return os.TempDir()
}

// removeStale removes socket folders in base whose process is gone. Only this user's folders can
// be removed; others' are left alone.
func removeStale(base string) {
	entries, err := os.ReadDir(base)
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), dirPrefix)
		if !ok || !e.IsDir() {
			continue
		}
		pidText, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			_ = os.RemoveAll(filepath.Join(base, e.Name())) // fails on another user's folder: left alone
		}
	}
}
