package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Log lines go to stderr in llama-server's format: by default each starts
// with the time since start (MIN.SS.mmm.uuu) and a level letter, as in
// "0.00.152.603 I srv  llama_server: listening on http://127.0.0.1:8080";
// --no-log-timestamps and --no-log-prefix drop those parts. Each line is one
// write call, so lines never interleave with each other or with the state
// lines on stdout when a parent merges the two streams.

// logStyle is set once by main before any other goroutine starts.
var logStyle = struct {
	prefix     bool // level letter
	timestamps bool // time since start
	start      time.Time
}{prefix: true, timestamps: true, start: time.Now()}

// Log levels, as llama-server prints them.
const (
	lvlInfo  = 'I'
	lvlWarn  = 'W'
	lvlError = 'E'
)

// logf prints one log line at level.
func logf(level byte, format string, a ...any) {
	line := strings.TrimSuffix(fmt.Sprintf(format, a...), "\n")
	var head string
	if logStyle.timestamps {
		us := time.Since(logStyle.start).Microseconds()
		head = fmt.Sprintf("%d.%02d.%03d.%03d ", us/60e6, us/1e6%60, us/1e3%1e3, us%1e3)
	}
	if logStyle.prefix {
		head += string(level) + " "
	}
	os.Stderr.WriteString(head + line + "\n")
}

// compLog prints a "<component> <function>: ..." line like llama-server's
// SRV_INF/QUE_INF/... macros: the component padded to five columns, the
// function right-aligned in twelve.
func compLog(level byte, comp, fn, format string, a ...any) {
	logf(level, "%-5s%12s: "+format, append([]any{comp, fn}, a...)...)
}

// srvLog prints a "srv  <function>: ..." line.
func srvLog(level byte, fn, format string, a ...any) { compLog(level, "srv", fn, format, a...) }

// slotLog prints a "slot <function>: id N | task M | ..." line.
func slotLog(fn string, slot, task int, format string, a ...any) {
	compLog(lvlInfo, "slot", fn, "id %2d | task %d | "+format, append([]any{slot, task}, a...)...)
}

// rawLog prints a line without prefix, as llama-server prints --version
// and argument errors.
func rawLog(format string, a ...any) {
	os.Stderr.WriteString(strings.TrimSuffix(fmt.Sprintf(format, a...), "\n") + "\n")
}

// obj is a JSON object that keeps its keys in the order given, as
// llama-server prints them.
type obj []field

type field struct {
	key string
	val any
}

func (o obj) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			buf.WriteByte(',')
		}
		k, err := marshal(f.key)
		if err != nil {
			return nil, err
		}
		v, err := marshal(f.val)
		if err != nil {
			return nil, err
		}
		buf.Write(k)
		buf.WriteByte(':')
		buf.Write(v)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// float prints like nlohmann::json prints a double: 0.0, 0.25, 1.0.
type float float64

func (f float) MarshalJSON() ([]byte, error) {
	s := strconv.FormatFloat(float64(f), 'f', -1, 64)
	if !strings.ContainsAny(s, ".eE") {
		s += ".0"
	}
	return []byte(s), nil
}

// marshal encodes v as JSON without escaping <, > and &, as llama-server
// (nlohmann::json) prints them.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// childStatePrefix starts every child→router line on stdout.
const childStatePrefix = "cmd_child_to_router:state:"

// routerExitCommand is the line a router writes on a child's stdin to stop it.
const routerExitCommand = "cmd_router_to_child:exit"

// notifyRouter prints a state line on stdout when running as a router child:
// cmd_child_to_router:state:{"state":S,"payload":P}. A nil payload prints as
// null, as llama-server does for "sleeping" and for "ready" after a wake.
func (s *server) notifyRouter(state string, payload any) {
	if !s.child {
		return
	}
	b, err := marshal(obj{{"state", state}, {"payload", payload}})
	if err != nil {
		logf(lvlError, "fakellama: encode state line: %v", err)
		return
	}
	os.Stdout.WriteString(childStatePrefix + string(b) + "\n")
}

// recorder appends one JSON line per event to the record file. The file is
// opened with O_APPEND and each line is one write, so several fakes can share
// one file and concurrent writers need no lock.
type recorder struct {
	f   *os.File // nil when recording is off
	pid int
}

// recordEvent is one line of the record file.
type recordEvent struct {
	Event  string    `json:"event"`
	PID    int       `json:"pid"`
	Time   time.Time `json:"time"`
	Args   []string  `json:"args,omitempty"`
	Path   string    `json:"path,omitempty"`
	Model  string    `json:"model,omitempty"`
	Stream bool      `json:"stream,omitempty"`
	Signal string    `json:"signal,omitempty"`
	Code   *int      `json:"code,omitempty"`
	Layers *int      `json:"layers,omitempty"` // "fit": the layers --fit left on the GPUs
}

func openRecorder(path string) (*recorder, error) {
	r := &recorder{pid: os.Getpid()}
	if path == "" {
		return r, nil
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open record file: %w", err)
	}
	r.f = f
	return r, nil
}

// write appends ev, filling in pid and time.
func (r *recorder) write(ev recordEvent) {
	if r == nil || r.f == nil {
		return
	}
	ev.PID = r.pid
	ev.Time = time.Now()
	b, err := json.Marshal(ev)
	if err != nil {
		logf(lvlError, "fakellama: encode record event: %v", err)
		return
	}
	if _, err := r.f.Write(append(b, '\n')); err != nil {
		logf(lvlError, "fakellama: write record event: %v", err)
	}
}

// event appends an event that has only a name.
func (r *recorder) event(name string) { r.write(recordEvent{Event: name}) }
