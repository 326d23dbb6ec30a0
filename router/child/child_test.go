package child

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/testbed"
)

const within = 15 * time.Second

func TestStartLoadingReadyStop(t *testing.T) {
	rec, recEnv := recordFile(t)
	spec := fakeSpec(t, "FAKE_LLAMA_LOAD_TIME=300ms", recEnv)
	c, ev := start(t, spec)

	first := ev.next(within)
	if first.Kind != Loading || first.PID != c.PID() || first.Addr != c.Addr() || first.Progress != 0 {
		t.Fatalf("first event %+v; want Loading with pid %d at %s progress 0", first, c.PID(), c.Addr())
	}
	sawProgress := false
	for ready := false; !ready; {
		e := ev.next(within)
		switch e.Kind {
		case Loading:
			if e.Progress <= 0 || e.Progress > 1 {
				t.Fatalf("progress event with progress %v", e.Progress)
			}
			sawProgress = sawProgress || e.Progress < 1
		case Ready:
			ready = true
			if e.PID != c.PID() || e.Addr != c.Addr() {
				t.Fatalf("Ready %+v; want pid %d at %s", e, c.PID(), c.Addr())
			}
		default:
			t.Fatalf("unexpected %v (err %v, tail %q)", e.Kind, e.Err, e.LogTail)
		}
	}
	if !sawProgress {
		t.Error("no load progress reported: state lines were not read")
	}
	if code := get(t, c, "/health"); code != http.StatusOK {
		t.Fatalf("/health after Ready = %d", code)
	}
	want := []string{"--host", c.Addr().Socket}
	if runtime.GOOS == "windows" {
		want = []string{"--host", "127.0.0.1", "--port", itoa(c.Port())}
		if u := fmt.Sprintf("http://127.0.0.1:%d", c.Port()); c.URL().String() != u {
			t.Fatalf("URL = %s, want %s", c.URL(), u)
		}
	} else if c.Port() != 0 || !strings.HasSuffix(c.Addr().Socket, ".sock") {
		t.Fatalf("child at %+v; want a unix socket and no port", c.Addr())
	}
	args := c.Args()
	if args[0] != spec.Binary || !slices.Equal(args[len(args)-len(want):], want) {
		t.Fatalf("Args = %q", args)
	}
	started := testbed.ReadRecord(t, rec)
	if len(started) == 0 || started[0].Event != "start" || started[0].PID != c.PID() || !slices.Equal(started[0].Args[1:], args[1:]) {
		t.Fatalf("record %+v; want start of pid %d with args %q", started, c.PID(), args)
	}
	c.Stop(false)
	c.Stop(false) // idempotent
	exit := ev.waitFor(Exited, within)
	waitDone(t, c, ev, within)
	// The log (stderr) is read paced; by the exit all of it is in.
	logs := c.Logs()
	if !slices.ContainsFunc(logs, func(l string) bool { return strings.Contains(l, "model loaded") }) {
		t.Errorf("Logs lack the fake's output: %q", logs)
	}
	for _, l := range logs {
		if strings.Contains(l, StatePrefix) {
			t.Errorf("state line kept in the log ring: %q", l)
		}
	}
	if !exit.Deliberate || exit.Err != nil || exit.ExitCode != 0 || exit.PID != first.PID {
		t.Fatalf("Exited %+v; want deliberate, no error, code 0", exit)
	}
	recs := testbed.ReadRecord(t, rec)
	if last := recs[len(recs)-1]; last.Event != "exit" || last.Code != 0 {
		t.Fatalf("fake's last record %+v; want a clean exit", last)
	}
	// A loaded router child is stopped by the stdin exit command alone.
	if slices.ContainsFunc(recs, func(r testbed.RecordEvent) bool { return r.Event == "signal" }) {
		t.Fatalf("a loaded router child got a signal: %+v", recs)
	}
}

func TestStopWhileLoading(t *testing.T) {
	c, ev := start(t, fakeSpec(t, "FAKE_LLAMA_LOAD_TIME=1m"))
	ev.waitFor(Loading, within)
	c.Stop(false)
	exit := ev.waitFor(Exited, within)
	waitDone(t, c, ev, within)
	if !exit.Deliberate || exit.Err != nil {
		t.Fatalf("Exited %+v; want deliberate without error", exit)
	}
	if runtime.GOOS != "windows" && exit.ExitCode != -1 {
		t.Fatalf("exit code %d; want -1: SIGTERM ends a loading child", exit.ExitCode)
	}
	if slices.Contains(ev.kinds(), Ready) {
		t.Fatal("Ready delivered for a child stopped while loading")
	}
}

func TestForceStop(t *testing.T) {
	c, ev := start(t, fakeSpec(t, "FAKE_LLAMA_LOAD_TIME=10ms"))
	ev.waitFor(Ready, within)
	c.Stop(true)
	c.Stop(false) // no downgrade
	exit := ev.waitFor(Exited, within)
	waitDone(t, c, ev, within)
	if !exit.Deliberate || exit.Err != nil || exit.ExitCode != -1 {
		t.Fatalf("Exited %+v; want deliberate, killed (-1)", exit)
	}
}

// TestIgnoreSigtermKilledAfterStopTimeout uses a child without the stdin
// protocol that ignores SIGTERM: only the SIGKILL after StopTimeout ends it.
func TestIgnoreSigtermKilledAfterStopTimeout(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no SIGTERM on Windows")
	}
	rec, recEnv := recordFile(t)
	spec := withoutRouterProtocol(t, fakeSpec(t, "FAKE_LLAMA_LOAD_TIME=10ms", "FAKE_LLAMA_IGNORE_SIGTERM=1", recEnv))
	spec.StopTimeout = 500 * time.Millisecond
	c, ev := start(t, spec)
	ev.waitFor(Ready, within)
	waitRecord(t, rec, "ready") // the fake handles SIGTERM from here on
	stopped := time.Now()
	c.Stop(false)
	exit := ev.waitFor(Exited, within)
	waitDone(t, c, ev, within)
	if waited := time.Since(stopped); waited < spec.StopTimeout {
		t.Fatalf("killed after %s, before the stop timeout %s", waited, spec.StopTimeout)
	}
	if !exit.Deliberate || exit.Err != nil || exit.ExitCode != -1 {
		t.Fatalf("Exited %+v; want deliberate, killed (-1)", exit)
	}
	var sawTerm, sawExit bool
	for _, r := range testbed.ReadRecord(t, rec) {
		sawTerm = sawTerm || (r.Event == "signal" && r.Signal == "SIGTERM")
		sawExit = sawExit || r.Event == "exit"
	}
	if !sawTerm || sawExit {
		t.Fatalf("record: SIGTERM seen %v, exit seen %v; want SIGTERM ignored then a kill", sawTerm, sawExit)
	}
}

// TestStopEscalates: a forced Stop during a graceful one kills at once.
func TestStopEscalates(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no SIGTERM on Windows")
	}
	rec, recEnv := recordFile(t)
	spec := withoutRouterProtocol(t, fakeSpec(t, "FAKE_LLAMA_LOAD_TIME=10ms", "FAKE_LLAMA_IGNORE_SIGTERM=1", recEnv))
	spec.StopTimeout = time.Hour
	c, ev := start(t, spec)
	ev.waitFor(Ready, within)
	waitRecord(t, rec, "ready") // the fake handles SIGTERM from here on
	c.Stop(false)
	waitRecord(t, rec, "signal")
	c.Stop(true)
	exit := ev.waitFor(Exited, within)
	waitDone(t, c, ev, within)
	if !exit.Deliberate || exit.ExitCode != -1 {
		t.Fatalf("Exited %+v; want deliberate, killed", exit)
	}
}

func TestLoadFailure(t *testing.T) {
	c, ev := start(t, fakeSpec(t, "FAKE_LLAMA_LOAD_TIME=40ms", "FAKE_LLAMA_FAIL_LOAD=1"))
	exit := ev.waitFor(Exited, within)
	waitDone(t, c, ev, within)
	if exit.Deliberate || exit.ExitCode != 1 || !errors.Is(exit.Err, ErrLoadFailed) {
		t.Fatalf("Exited %+v; want a load failure with code 1", exit)
	}
	const line = "llama_model_load: error loading model: fail_load is set for this model"
	if !slices.ContainsFunc(exit.LogTail, func(l string) bool { return strings.Contains(l, line) }) {
		t.Fatalf("LogTail %q lacks %q", exit.LogTail, line)
	}
	logs := c.Logs()
	if want := logs[max(0, len(logs)-LogTailLines):]; !slices.Equal(exit.LogTail, want) {
		t.Fatalf("LogTail %q is not the tail of Logs %q", exit.LogTail, logs)
	}
	if !strings.Contains(exit.Err.Error(), "exiting due to model loading error") {
		t.Errorf("error %q does not quote the last output line", exit.Err)
	}
}

func TestLoadTimeout(t *testing.T) {
	spec := fakeSpec(t, "FAKE_LLAMA_LOAD_TIME=2m")
	spec.LoadTimeout = 300 * time.Millisecond
	c, ev := start(t, spec)
	exit := ev.waitFor(Exited, within)
	waitDone(t, c, ev, within)
	if exit.Deliberate || exit.ExitCode != -1 || !errors.Is(exit.Err, ErrLoadTimeout) {
		t.Fatalf("Exited %+v; want a load timeout, killed", exit)
	}
}

// TestLoadTimeoutExtendedByOutput: the fake prints progress every 500ms for
// 2s; a 1.2s timeout counted from the last output never fires.
func TestLoadTimeoutExtendedByOutput(t *testing.T) {
	spec := fakeSpec(t, "FAKE_LLAMA_LOAD_TIME=2s")
	spec.LoadTimeout = 1200 * time.Millisecond
	c, ev := start(t, spec)
	ev.waitFor(Ready, within)
	c.Stop(false)
	ev.waitFor(Exited, within)
	waitDone(t, c, ev, within)
}

func TestCrashAfterReady(t *testing.T) {
	c, ev := start(t, fakeSpec(t, "FAKE_LLAMA_LOAD_TIME=10ms"))
	ev.waitFor(Ready, within)
	if resp, err := clientFor(c).Post(c.URL().String()+"/fake/crash", "application/json", nil); err == nil {
		resp.Body.Close() // the crash may or may not let a response out
	}
	exit := ev.waitFor(Exited, within)
	waitDone(t, c, ev, within)
	if exit.Deliberate || exit.ExitCode != 3 || !errors.Is(exit.Err, ErrCrashed) {
		t.Fatalf("Exited %+v; want a crash with code 3", exit)
	}
}

func TestBindFailureRetry(t *testing.T) {
	busy := occupy(t)
	spec := fakeSpec(t, "FAKE_LLAMA_LOAD_TIME=10ms")
	ports := &fixedFirst{first: []Addr{busy}, rest: spec.Addrs}
	spec.Addrs = ports
	c, ev := start(t, spec)

	if e := ev.next(within); e.Kind != Loading || e.Addr != busy {
		t.Fatalf("first event %+v; want Loading on the busy address %s", e, busy)
	}
	var second Event
	for second.Kind == 0 {
		if e := ev.next(within); e.Kind == Loading && e.Addr != busy {
			second = e
		} else if e.Kind != Loading {
			t.Fatalf("got %v (err %v) before the restart on a new port", e.Kind, e.Err)
		}
	}
	ready := ev.waitFor(Ready, within)
	if ready.Addr != second.Addr || ready.PID != second.PID || c.Addr() != ready.Addr || c.PID() != ready.PID {
		t.Fatalf("Ready %+v after restart %+v; child says pid %d at %s", ready, second, c.PID(), c.Addr())
	}
	if code := get(t, c, "/health"); code != http.StatusOK {
		t.Fatalf("/health on the new port = %d", code)
	}
	if !slices.ContainsFunc(c.Logs(), func(l string) bool { return strings.Contains(l, "couldn't bind") }) {
		t.Errorf("Logs lack the bind failure: %q", c.Logs())
	}
	c.Stop(false)
	ev.waitFor(Exited, within)
	waitDone(t, c, ev, within)
	ports.mu.Lock()
	defer ports.mu.Unlock()
	if !slices.Equal(ports.puts, []Addr{busy, ready.Addr}) {
		t.Fatalf("addresses given back %v; want [%s %s]", ports.puts, busy, ready.Addr)
	}
}

func TestBindFailureGivesUp(t *testing.T) {
	busy := occupy(t)
	first := slices.Repeat([]Addr{busy}, MaxBindRetries+1)
	spec := fakeSpec(t, "FAKE_LLAMA_LOAD_TIME=10ms")
	spec.Addrs = &fixedFirst{first: first, rest: spec.Addrs}
	c, ev := start(t, spec)
	exit := ev.waitFor(Exited, within)
	waitDone(t, c, ev, within)
	if exit.Deliberate || !errors.Is(exit.Err, ErrBind) || exit.ExitCode != 1 || exit.Addr != busy {
		t.Fatalf("Exited %+v; want a bind failure on %s", exit, busy)
	}
	if n := strings.Count(strings.Join(exit.LogTail, "\n"), "couldn't bind"); n != MaxBindRetries+1 {
		t.Fatalf("%d bind failures in the log tail; want %d", n, MaxBindRetries+1)
	}
	if k := ev.kinds(); !slices.Equal(k, []EventKind{Loading, Loading, Loading, Loading, Exited}) {
		t.Fatalf("events %v", k)
	}
}

func TestStartFailure(t *testing.T) {
	ports := &fixedFirst{rest: testAddrs(t)}
	spec := Spec{Binary: filepath.Join(t.TempDir(), "no-such-llama-server"), Addrs: ports, Logger: discardLogger()}
	c, err := Start(spec, func(e Event) { t.Errorf("event %v after a failed start", e.Kind) })
	if err == nil || c != nil || !errors.Is(err, ErrStart) {
		t.Fatalf("Start = %v, %v; want ErrStart", c, err)
	}
	ports.mu.Lock()
	defer ports.mu.Unlock()
	if len(ports.puts) != 1 {
		t.Fatalf("the port was not given back: puts %v", ports.puts)
	}
}

func TestSleepWake(t *testing.T) {
	rec, recEnv := recordFile(t)
	spec := fakeSpec(t, "FAKE_LLAMA_LOAD_TIME=10ms", slowTokens, recEnv)
	spec.Args = append(spec.Args, "--sleep-idle-seconds", "1")
	testSleepWake(t, spec, rec)
}

// TestSleepWakeWithoutStateLines: a child that prints no state lines is found
// ready by /health and asleep or awake by /props.
func TestSleepWakeWithoutStateLines(t *testing.T) {
	rec, recEnv := recordFile(t)
	spec := withoutRouterProtocol(t, fakeSpec(t, "FAKE_LLAMA_LOAD_TIME=10ms", slowTokens, recEnv))
	spec.Args = append(spec.Args, "--sleep-idle-seconds", "1")
	testSleepWake(t, spec, rec)
}

// slowTokens makes an 8-token request take 3.2s, longer than PropsInterval.
const slowTokens = "FAKE_LLAMA_TOKEN_DELAY=400ms"

func testSleepWake(t *testing.T, spec Spec, rec string) {
	c, ev := start(t, spec)
	ev.waitFor(Ready, within)
	ev.waitFor(Sleeping, within)
	if !slices.ContainsFunc(testbed.ReadRecord(t, rec), func(r testbed.RecordEvent) bool { return r.Event == "sleep" }) {
		t.Fatal("Sleeping delivered but the fake did not record a sleep")
	}
	// The request streams for longer than PropsInterval (FAKE_LLAMA_TOKEN_DELAY),
	// so the child stays awake long enough for /props polling to see it.
	status := make(chan int, 1)
	go func() {
		resp, err := clientFor(c).Post(c.URL().String()+"/completion", "application/json",
			strings.NewReader(`{"prompt":"hello","n_predict":8}`))
		if err != nil {
			status <- -1
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		status <- resp.StatusCode
	}()
	ev.waitFor(Woke, within)
	if code := <-status; code != http.StatusOK {
		t.Fatalf("POST /completion = %d", code)
	}
	c.Stop(false)
	exit := ev.waitFor(Exited, within)
	waitDone(t, c, ev, within)
	if !exit.Deliberate || exit.Err != nil {
		t.Fatalf("Exited %+v", exit)
	}
}

func TestLogsRing(t *testing.T) {
	spec := fakeSpec(t, "FAKE_LLAMA_LOAD_TIME=10ms")
	spec.LogLines = 5
	c, ev := start(t, spec)
	ev.waitFor(Ready, within)
	c.Stop(false)
	exit := ev.waitFor(Exited, within)
	waitDone(t, c, ev, within)
	logs := c.Logs()
	if len(logs) != 5 {
		t.Fatalf("%d lines kept, want 5: %q", len(logs), logs)
	}
	if !slices.Equal(exit.LogTail, logs) {
		t.Fatalf("LogTail %q, Logs %q: want equal", exit.LogTail, logs)
	}
	if !strings.Contains(logs[len(logs)-1], "cleaning up before exit") {
		t.Fatalf("newest line %q is not the fake's last output", logs[len(logs)-1])
	}
}

// waitRecord waits until the fake has recorded event.
func waitRecord(t *testing.T, rec, event string) {
	t.Helper()
	testbed.WaitFor(t, within, "the fake to record "+event, func() bool {
		return slices.ContainsFunc(testbed.ReadRecord(t, rec), func(r testbed.RecordEvent) bool { return r.Event == event })
	})
}

// Children on TCP (as on Windows) listen on a 127.0.0.1 port given by the allocator.
func TestChildOnTCP(t *testing.T) {
	spec := fakeSpec(t, "FAKE_LLAMA_LOAD_TIME=10ms")
	spec.Addrs = newTCPPorts()
	c, ev := start(t, spec)
	ready := ev.waitFor(Ready, within)
	if ready.Port == 0 || ready.Socket != "" || c.URL().String() != fmt.Sprintf("http://127.0.0.1:%d", ready.Port) {
		t.Fatalf("Ready %+v, URL %s", ready, c.URL())
	}
	if args := c.Args(); !slices.Equal(args[len(args)-4:], []string{"--host", "127.0.0.1", "--port", itoa(ready.Port)}) {
		t.Fatalf("Args = %q", args)
	}
	if code := get(t, c, "/health"); code != http.StatusOK {
		t.Fatalf("/health = %d", code)
	}
	c.Stop(false)
	ev.waitFor(Exited, within)
	waitDone(t, c, ev, within)
}
