package worker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/llamatray/llamatray/router/atomicfile"
	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/locate"
	"github.com/llamatray/llamatray/router/wire"
)

// lendTokenFile is the pairing token's file in the state folder.
const lendTokenFile = "worker-token"

// Lender is the tray's "Lend this machine" (config lend and lend_listen), held by the service:
// while lend is on it runs what `llamatray worker` runs, llama.cpp's RPC server bound to 127.0.0.1
// behind the link on lend_listen (Serve; one at a time, started and stopped by Sync). Its pairing
// token is kept in the state folder (lendTokenFile, readable by this user only), made the first
// time, so that the [workers.NAME] section a head was given stays valid across restarts;
// ReplaceToken replaces it, which locks out every head that had it.
type Lender struct {
	log     *slog.Logger
	dir     string        // the state folder, where the token is kept
	llama   func() string // the llama-server beside which the rpc-server is looked for
	version string
	name    string // the worker's name heads see: the host name

	// syncMu makes one sync at a time: stopping the running worker and starting the next are one
	// step, so two changes at once never leave two workers running. It is held while the old
	// worker ends (bounded: Serve returns once its context is cancelled); mu is taken under it.
	syncMu sync.Mutex
	// tokenMu makes reading, making and replacing the token file one step each, so that every
	// caller gets the token the file holds. It guards the file, not memory; mu is taken under it.
	tokenMu sync.Mutex

	mu     sync.Mutex // guards every field below
	listen string     // what runs: lend_listen, "" when off
	token  string
	cancel context.CancelFunc // ends the running Serve; nil when off
	done   chan struct{}      // closed when the running Serve returns
	state  string             // wire.Lend*
	addr   string
	err    string
	// isolation is Isolation's mode once lent (wire.Lending.Isolation).
	isolation string
}

// NewLender makes the lender, lending nothing until Sync: dir is the state folder, where the token
// is kept; llama the llama-server beside which the rpc-server is looked for.
func NewLender(log *slog.Logger, dir, version string, llama func() string) *Lender {
	name, _ := os.Hostname()
	return &Lender{log: log, dir: dir, llama: llama, version: version, name: ConfigName(name), state: wire.LendOff}
}

// Sync makes what runs match cfg: started when lend is on, stopped when off, restarted when
// lend_listen changed, the last start failed, or restart is set (a new token).
func (l *Lender) Sync(cfg config.Config, restart bool) {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	want := ""
	if cfg.Lend {
		want = cfg.LendListen
	}
	l.mu.Lock()
	if want == l.listen && l.state != wire.LendFailed && !restart {
		l.mu.Unlock()
		return
	}
	cancel, done := l.cancel, l.done
	l.cancel, l.done, l.listen, l.addr, l.err, l.state = nil, nil, want, "", "", wire.LendOff
	l.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
	if want != "" {
		l.start(want)
	}
}

// start runs Serve on listen in a goroutine of its own.
func (l *Lender) start(listen string) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	l.mu.Lock()
	l.cancel, l.done, l.state = cancel, done, wire.LendStarting
	l.mu.Unlock()
	go func() {
		defer close(done)
		err := l.serve(ctx, listen)
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.done != done { // stopped or replaced: Sync set the state
			return
		}
		if err == nil && ctx.Err() != nil {
			l.state = wire.LendOff
			return
		}
		if err == nil {
			err = errors.New("the worker stopped")
		}
		l.state, l.err, l.addr = wire.LendFailed, err.Error(), ""
	}()
}

// serve finds the rpc-server and the token, then serves until ctx ends.
func (l *Lender) serve(ctx context.Context, listen string) error {
	path, err := locate.RPCServer(ctx, "", l.llama())
	if err != nil {
		l.log.Warn("not lending this machine", "err", err)
		return err
	}
	token, err := l.readToken(false)
	if err != nil {
		return err
	}
	l.mu.Lock()
	l.token = token
	l.mu.Unlock()
	l.log.Info("lending this machine", "listen", listen, "rpc_server", path)
	err = Serve(ctx, Options{
		Listen: listen, Token: token, RPCServer: path, Logger: l.log, Name: l.name, Version: l.version,
		Ready: func(addr string) {
			mode, _ := Isolation() // found by Serve already
			l.mu.Lock()
			if l.cancel != nil && l.listen == listen {
				l.state, l.addr, l.isolation = wire.LendOn, addr, mode
			}
			l.mu.Unlock()
		},
	})
	if err != nil {
		l.log.Warn("lending stopped", "listen", listen, "err", err)
		return fmt.Errorf("lending this machine on %s: %w", listen, err)
	}
	return nil
}

// readToken is the kept token, made and saved first when there is none or fresh is set. A token
// file others may read is refused: that token may be known to them.
func (l *Lender) readToken(fresh bool) (string, error) {
	if l.dir == "" {
		return "", errors.New("no state folder to keep the lending token in (set XDG_STATE_HOME)")
	}
	l.tokenMu.Lock()
	defer l.tokenMu.Unlock()
	path := filepath.Join(l.dir, lendTokenFile)
	if !fresh {
		st, err := os.Stat(path)
		switch {
		case err == nil && runtime.GOOS != "windows" && st.Mode().Perm()&0o077 != 0:
			return "", fmt.Errorf("the lending token %s may be read by other users (mode %v): delete it to make a new one, then give heads the new lines", path, st.Mode().Perm())
		case err != nil && !errors.Is(err, fs.ErrNotExist):
			return "", fmt.Errorf("reading the lending token: %w", err)
		}
		b, err := os.ReadFile(path)
		if err == nil && strings.TrimSpace(string(b)) != "" {
			return strings.TrimSpace(string(b)), nil
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("reading the lending token: %w", err)
		}
	}
	t, err := NewToken()
	if err != nil {
		return "", err
	}
	if err = os.MkdirAll(l.dir, 0o700); err == nil {
		err = atomicfile.Write(path, []byte(t+"\n"), 0o600)
	}
	if err != nil {
		return "", fmt.Errorf("saving the lending token: %w", err)
	}
	return t, nil
}

// Status is what is lent now, cfg the configuration in force.
func (l *Lender) Status(cfg config.Config) wire.Lending {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := wire.Lending{On: cfg.Lend, State: l.state, Listen: cfg.LendListen, Addr: l.addr, Error: l.err, Name: l.name}
	if l.state == wire.LendOn {
		st.Isolation = l.isolation
	}
	return st
}

// Close stops lending.
func (l *Lender) Close() { l.Sync(config.Config{}, false) }

// ConfigLines are the lines a head adds to its configuration to use this machine: its
// [workers.NAME] section with the address and the pairing token (made now if there is none yet);
// cfg is the configuration in force. Only the app shows them; no API serves the token.
func (l *Lender) ConfigLines(cfg config.Config) (string, error) {
	t, err := l.readToken(false)
	if err != nil {
		return "", err
	}
	st := l.Status(cfg)
	return ConfigLines(st.Name, cmp.Or(st.Addr, st.Listen), t), nil
}

// ReplaceToken replaces the pairing token: heads given the old one are refused from now on. A
// running worker restarts with the new one (cfg is the configuration in force).
func (l *Lender) ReplaceToken(cfg config.Config) error {
	if _, err := l.readToken(true); err != nil {
		return err
	}
	l.Sync(cfg, true)
	return nil
}
