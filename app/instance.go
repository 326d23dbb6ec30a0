package app

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/adrg/xdg"
)

// errAlreadyRunning says another Llamatray owns the instance socket and was asked to show itself.
var errAlreadyRunning = errors.New("llamatray is already running")

// instanceSocketPath is where the first instance listens: $XDG_RUNTIME_DIR/llamatray.sock (per user).
func instanceSocketPath() string {
	return filepath.Join(cmp.Or(xdg.RuntimeDir, os.TempDir()), "llamatray.sock")
}

// instance is the first Llamatray's end of the single-instance socket.
type instance struct {
	ln   net.Listener
	path string
	once sync.Once // guards closing ln and removing path
}

// claimInstance makes this process the single instance, listening on path. When another instance is
// listening there, it is sent "show" and errAlreadyRunning is returned. A socket left behind by a
// crashed instance (nobody accepts) is removed and taken over.
func claimInstance(path string) (*instance, error) {
	for attempt := 0; attempt < 2; attempt++ {
		ln, err := net.Listen("unix", path)
		if err == nil {
			return &instance{ln: ln, path: path}, nil
		}
		if sendCommand(path, "show") == nil {
			return nil, errAlreadyRunning
		}
		// Nobody answers: a stale socket from an instance that did not exit cleanly.
		if rmErr := os.Remove(path); rmErr != nil && !errors.Is(rmErr, os.ErrNotExist) {
			return nil, fmt.Errorf("single-instance socket %s: %w", path, err)
		}
	}
	return nil, fmt.Errorf("single-instance socket %s: could not listen", path)
}

// sendCommand asks the instance listening on path to run cmd and waits for its "ok".
func sendCommand(path, cmd string) error {
	conn, err := net.DialTimeout("unix", path, 2*time.Second)
	if err != nil {
		return fmt.Errorf("connect to the running instance: %w", err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Write([]byte(cmd + "\n")); err != nil {
		return fmt.Errorf("send %q: %w", cmd, err)
	}
	reply, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return fmt.Errorf("read the reply to %q: %w", cmd, err)
	}
	if strings.TrimSpace(reply) != "ok" {
		return fmt.Errorf("running instance answered %q to %q", strings.TrimSpace(reply), cmd)
	}
	return nil
}

// serve answers later launches until ctx ends or the instance is closed: each "show" calls show.
func (in *instance) serve(ctx context.Context, log *slog.Logger, show func()) {
	context.AfterFunc(ctx, func() { in.Close() })
	for {
		conn, err := in.ln.Accept()
		if err != nil {
			return // closed
		}
		go in.handle(conn, log, show)
	}
}

func (in *instance) handle(conn net.Conn, log *slog.Logger, show func()) {
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return
	}
	switch cmd := strings.TrimSpace(line); cmd {
	case "show":
		log.Info("another launch asked to show the window")
		show()
		conn.Write([]byte("ok\n"))
	default:
		conn.Write([]byte("unknown command\n"))
	}
}

// Close stops listening and removes the socket file. It is safe to call more than once.
func (in *instance) Close() error {
	var err error
	in.once.Do(func() {
		err = in.ln.Close()
		// On Windows the socket file is not removed by Close.
		if rmErr := os.Remove(in.path); rmErr != nil && !errors.Is(rmErr, os.ErrNotExist) && err == nil {
			err = rmErr
		}
	})
	return err
}
