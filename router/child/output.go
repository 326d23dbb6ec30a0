package child

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"sync"
)

// Limits on output lines.
const (
	maxLineBytes   = 1 << 20 // a longer line without newline is cut here
	maxStoredBytes = 4096    // lines kept in the ring are cut to this
)

// ring keeps the last output lines of a child, across restarts.
type ring struct {
	mu    sync.Mutex // guards lines, next and full
	lines []string
	next  int
	full  bool
}

func newRing(n int) *ring { return &ring{lines: make([]string, n)} }

func (r *ring) add(line string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines[r.next] = line
	r.next++
	if r.next == len(r.lines) {
		r.next, r.full = 0, true
	}
}

// keep adds an output line, cut to maxStoredBytes.
func (r *ring) keep(l string) {
	if len(l) > maxStoredBytes {
		l = strings.ToValidUTF8(l[:maxStoredBytes], "") + "…"
	}
	r.add(l)
}

// snapshot returns the kept lines, oldest first.
func (r *ring) snapshot() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.full {
		return append([]string(nil), r.lines[:r.next]...)
	}
	out := make([]string, 0, len(r.lines))
	out = append(out, r.lines[r.next:]...)
	return append(out, r.lines[:r.next]...)
}

// tail returns the last n kept lines, oldest first.
func (r *ring) tail(n int) []string {
	all := r.snapshot()
	if len(all) > n {
		all = all[len(all)-n:]
	}
	return all
}

// stateMsg is one parsed state line.
type stateMsg struct {
	State       string  // "loading", "ready", "sleeping", "downloading", …
	Progress    float64 // loading: payload "value", clamped to 0..1
	HasProgress bool
}

// parseStateLine parses `cmd_child_to_router:state:{"state":S,"payload":P}`.
// It reports false for any other line, including a state line whose JSON is
// malformed (that one is kept as an ordinary log line).
func parseStateLine(line string) (stateMsg, bool) {
	rest, ok := strings.CutPrefix(line, StatePrefix)
	if !ok {
		return stateMsg{}, false
	}
	var raw struct {
		State   string          `json:"state"`
		Payload json.RawMessage `json:"payload"`
	}
	if err := json.Unmarshal([]byte(rest), &raw); err != nil || raw.State == "" {
		return stateMsg{}, false
	}
	msg := stateMsg{State: raw.State}
	var progress struct {
		Value *float64 `json:"value"`
	}
	if len(raw.Payload) > 0 && raw.Payload[0] == '{' && json.Unmarshal(raw.Payload, &progress) == nil && progress.Value != nil {
		msg.Progress = min(max(*progress.Value, 0), 1)
		msg.HasProgress = true
	}
	return msg, true
}

// bindFailureMarks are lower-case fragments of the messages a server prints
// when its port is taken (llama-server: "couldn't bind HTTP server socket").
var bindFailureMarks = []string{
	"couldn't bind",
	"could not bind",
	"failed to bind",
	"address already in use",
	"address in use",
	"only one usage of each socket address", // Windows WSAEADDRINUSE
}

// isBindFailure reports whether an output line says the port could not be bound.
func isBindFailure(line string) bool {
	lower := strings.ToLower(line)
	return slices.ContainsFunc(bindFailureMarks, func(m string) bool { return strings.Contains(lower, m) })
}

// lineTaker is what a lineSink hands lines to: a llama-server's proc or a Process.
type lineTaker interface {
	wrote()           // output came; returns once the process's pid is known
	line(line string) // one complete line
}

// lineSink receives one output stream of a process (exec copies the pipe into
// it) and splits it into lines. Each stream has its own sink so partial lines
// of stdout and stderr never mix.
type lineSink struct {
	p   lineTaker
	mu  sync.Mutex // guards buf, the partial line not yet ended by a newline
	buf []byte
}

// Write records output activity and hands every complete line to the process.
func (s *lineSink) Write(b []byte) (int, error) {
	s.p.wrote()
	s.mu.Lock()
	s.buf = append(s.buf, b...)
	var lines []string
	for {
		i := bytes.IndexByte(s.buf, '\n')
		if i < 0 {
			break
		}
		lines = append(lines, string(bytes.TrimSuffix(s.buf[:i], []byte{'\r'})))
		s.buf = s.buf[i+1:]
	}
	if len(s.buf) > maxLineBytes {
		lines = append(lines, string(s.buf))
		s.buf = nil
	}
	if len(s.buf) == 0 {
		s.buf = nil // let a large buffer go
	}
	s.mu.Unlock()
	for _, l := range lines {
		s.p.line(l)
	}
	return len(b), nil
}

// takePartial returns and clears the unterminated last line, if any.
func (s *lineSink) takePartial() (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.buf) == 0 {
		return "", false
	}
	l := string(bytes.TrimSuffix(s.buf, []byte{'\r'}))
	s.buf = nil
	return l, true
}

// wrote records output activity, which extends the load timeout, and waits for the pid.
func (p *proc) wrote() {
	p.touch()
	<-p.started
}

// line handles one complete output line: state lines go to the supervisor,
// everything else to the ring buffer and the debug log.
func (p *proc) line(l string) {
	if msg, ok := parseStateLine(l); ok {
		select {
		case p.states <- msg:
		case <-p.quit: // the supervisor is done with this process
		}
		return
	}
	p.logLine(l)
}

// logLine keeps an ordinary output line and notes a bind failure and the device buffers.
func (p *proc) logLine(l string) {
	if !p.loaded.Load() { // a port is bound, and buffers allocated, before the model is ready
		if isBindFailure(l) {
			p.bindFailed.Store(true)
		}
		p.buffers.add(l)
	}
	if p.log.Enabled(context.Background(), slog.LevelDebug) {
		p.log.Debug("llama-server output", "line", l)
	}
	p.ring.keep(l)
}
