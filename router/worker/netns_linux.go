package worker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Linux: the rpc-server runs in a network namespace of its own, whose loopback no other process
// reaches: the worker re-executes its own binary as the shim (argv[0] shimArg0, in new user and
// network namespaces, the namespace's root mapped to the worker's own uid and gid), which brings
// that namespace's lo up, starts the rpc-server there as its child, connects to it and passes the
// connected socket to the worker over an inherited socketpair (fd 3, SCM_RIGHTS). The worker then
// holds it as everywhere else (held). The shim and the rpc-server share the process group the
// worker kills, and each dies with its parent (Pdeathsig).

// shimArg0 is the shim's argv[0]; the rest of its argv is the rpc-server's (none: a probe that
// only brings lo up).
const shimArg0 = "llamatray-rpc-netns"

// shimFD is the shim's end of the socketpair (its ExtraFiles[0]).
const shimFD = 3

// Every binary that imports this package can be the shim: it is recognised before main runs.
func init() {
	if len(os.Args) > 0 && os.Args[0] == shimArg0 {
		os.Exit(shim(os.Args[1:]))
	}
}

// nsAttr puts the shim in new user and network namespaces, root there being the worker's uid and
// gid (child.StartProcess adds its own process group and Pdeathsig).
func nsAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
	}
}

// probeIsolation runs the shim once without an rpc-server: IsolationNetns when it could make the
// namespaces and bring their lo up, else IsolationHeld and why not (user namespaces off by
// sysctl or by AppArmor, seccomp, an old kernel).
func probeIsolation() (string, error) {
	cmd := exec.Command("/proc/self/exe")
	cmd.Args = []string{shimArg0}
	cmd.SysProcAttr = nsAttr()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		if o := bytes.TrimSpace(out.Bytes()); len(o) > 0 {
			err = fmt.Errorf("%w: %s", err, o)
		}
		return IsolationHeld, fmt.Errorf("no user and network namespace (user namespaces may be off: sysctl user.max_user_namespaces or kernel.unprivileged_userns_clone, AppArmor, seccomp): %w", err)
	}
	return IsolationNetns, nil
}

// command is argv run through the shim in its own namespaces, and the worker's end of the
// socketpair the shim passes its connection over; without netns, argv itself.
func (c *rpcChild) command(argv []string) (*exec.Cmd, handover, error) {
	if !c.netns {
		return exec.Command(argv[0], argv[1:]...), nil, nil
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("socketpair: %w", err)
	}
	mine, theirs := os.NewFile(uintptr(fds[0]), "rpc-netns"), os.NewFile(uintptr(fds[1]), "rpc-netns-shim")
	fc, err := net.FileConn(mine)
	mine.Close()
	if err != nil {
		theirs.Close()
		return nil, nil, fmt.Errorf("socketpair: %w", err)
	}
	cmd := exec.Command("/proc/self/exe", argv...)
	cmd.Args[0] = shimArg0
	cmd.ExtraFiles = []*os.File{theirs} // fd 3 (shimFD)
	cmd.SysProcAttr = nsAttr()
	return cmd, &fdHandover{uc: fc.(*net.UnixConn), theirs: theirs}, nil
}

// fdHandover receives the shim's connection to the rpc-server.
type fdHandover struct {
	uc     *net.UnixConn
	theirs *os.File // the shim's end, closed here once the shim has it
}

func (f *fdHandover) started() { f.theirs.Close() }

func (f *fdHandover) close() {
	f.theirs.Close()
	f.uc.Close()
}

// receive waits for the shim's connection: an error when the shim exits first (its end of the
// socketpair closes), ctx ends or rpcReadyTimeout passes.
func (f *fdHandover) receive(ctx context.Context) (net.Conn, error) {
	f.uc.SetReadDeadline(time.Now().Add(rpcReadyTimeout))
	stop := context.AfterFunc(ctx, func() { f.uc.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	buf, oob := make([]byte, 1), make([]byte, unix.CmsgSpace(4))
	_, oobn, _, _, err := f.uc.ReadMsgUnix(buf, oob)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err != nil {
		return nil, fmt.Errorf("no connection from the rpc-server's namespace: %w", err)
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return nil, fmt.Errorf("no connection from the rpc-server's namespace (%d messages): %v", len(msgs), err)
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return nil, fmt.Errorf("no connection from the rpc-server's namespace (%d fds): %v", len(fds), err)
	}
	unix.CloseOnExec(fds[0])
	file := os.NewFile(uintptr(fds[0]), "rpc-server")
	defer file.Close()
	conn, err := net.FileConn(file)
	if err != nil {
		return nil, fmt.Errorf("the rpc-server's connection: %w", err)
	}
	return conn, nil
}

// shim runs in the new namespaces: lo up, then (given argv) the rpc-server started, connected to
// the moment it listens on the port of its argv, the connection passed to the worker on shimFD;
// its exit status is the rpc-server's.
func shim(argv []string) int {
	runtime.LockOSThread() // the rpc-server's Pdeathsig is tied to this thread, which lives until exit
	fail := func(err error) int {
		fmt.Fprintf(os.Stderr, "llamatray: rpc-server's network namespace: %v\n", err)
		return 2
	}
	if err := loopbackUp(); err != nil {
		return fail(err)
	}
	if len(argv) == 0 {
		return 0
	}
	unix.CloseOnExec(shimFD) // the rpc-server does not inherit the worker's socketpair
	i := slices.Index(argv, "-p")
	if i < 0 || i+1 >= len(argv) {
		return fail(fmt.Errorf("no -p PORT in %q", argv))
	}
	addr := net.JoinHostPort("127.0.0.1", argv[i+1])
	if err := noCaps(); err != nil {
		return fail(err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // the shim's process group
	if err := cmd.Start(); err != nil {
		return fail(err)
	}
	done := make(chan struct{})
	var werr error // cmd.Wait's, once done is closed
	go func() { werr = cmd.Wait(); close(done) }()
	conn, err := dialStarted(context.Background(), addr, done, func() error { return werr })
	if err == nil {
		err = sendConn(conn)
	}
	if err != nil {
		cmd.Process.Kill()
		<-done
		return fail(err)
	}
	conn.Close()
	unix.Close(shimFD)
	<-done
	err = werr
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return fail(err)
	}
	return 0
}

// sendConn passes conn's socket to the worker over shimFD.
func sendConn(conn net.Conn) error {
	raw, err := conn.(*net.TCPConn).SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	err = raw.Control(func(fd uintptr) {
		serr = unix.Sendmsg(shimFD, []byte{0}, unix.UnixRights(int(fd)), nil, 0)
	})
	if err != nil {
		return err
	}
	if serr != nil {
		return fmt.Errorf("passing the connection to the worker: %w", serr)
	}
	return nil
}

// Securebits (linux/securebits.h): root's execve grants no capabilities, for good.
const (
	secbitNoroot       = 1 << 0
	secbitNorootLocked = 1 << 1
)

// noCaps makes what this thread starts run without capabilities: root of the namespace has all of
// them there (over its network namespace: netfilter, interfaces), which the rpc-server needs none
// of. Securebits and no_new_privs are the thread's, and the rpc-server is started from it.
func noCaps() error {
	if err := unix.Prctl(unix.PR_SET_SECUREBITS, secbitNoroot|secbitNorootLocked, 0, 0, 0); err != nil {
		return fmt.Errorf("securebits: %w", err)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	return nil
}

// loopbackUp brings the namespace's lo up (a new network namespace has it down).
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("socket: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("lo's flags: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("lo up: %w", err)
	}
	return nil
}
