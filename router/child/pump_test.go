package child

import (
	"bytes"
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// countingSink records what the pump hands on and in how many writes.
type countingSink struct {
	mu     sync.Mutex // guards buf and writes
	buf    bytes.Buffer
	writes int
}

func (s *countingSink) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes++
	return s.buf.Write(b)
}

// TestStderrPumpBatchesReads writes 300 lines one small write at a time, as llama-server does; the
// pump must hand all of them on, in order, in far fewer reads than writes.
func TestStderrPumpBatchesReads(t *testing.T) {
	p, err := newStderrPump()
	if err != nil {
		t.Fatal(err)
	}
	var sink countingSink
	go p.run(&sink)
	var want strings.Builder
	for i := range 300 {
		for _, part := range []string{fmt.Sprintf("0.00.%03d ", i), "I ", fmt.Sprintf("line %d\n", i)} {
			want.WriteString(part)
			if _, err := p.w.WriteString(part); err != nil {
				t.Fatal(err)
			}
		}
	}
	p.w.Close()
	<-p.done
	if got := sink.buf.String(); got != want.String() {
		t.Fatalf("pump lost or reordered output: got %d bytes, want %d", len(got), want.Len())
	}
	if sink.writes > 30 {
		t.Fatalf("900 writes read in %d reads; want them batched", sink.writes)
	}
}

// TestStderrPumpWaitDelay: a grandchild that keeps stderr open must not hold up the reaping for
// longer than waitDelay, and the clean exit is then reported as exec.ErrWaitDelay.
func TestStderrPumpWaitDelay(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("needs sh")
	}
	p, err := newStderrPump()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", "echo started >&2; sleep 5 & exit 0")
	cmd.Stderr = p.w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.w.Close()
	var sink countingSink
	go p.run(&sink)
	start := time.Now()
	err = p.wait(cmd)
	if !errors.Is(err, exec.ErrWaitDelay) {
		t.Fatalf("wait = %v; want exec.ErrWaitDelay", err)
	}
	if d := time.Since(start); d > waitDelay+5*time.Second {
		t.Fatalf("wait took %s; want about %s", d, waitDelay)
	}
	if !strings.Contains(sink.buf.String(), "started") {
		t.Fatalf("output before the exit lost: %q", sink.buf.String())
	}
}

// TestStderrPumpCatchUp: what was written before catchUp is in the sink when it returns, while the
// pump would otherwise still be pacing; on a pipe read empty it answers at once, not at the bound.
func TestStderrPumpCatchUp(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("a pipe there cannot say it is empty; catchUp waits for its bound")
	}
	p, err := newStderrPump()
	if err != nil {
		t.Fatal(err)
	}
	defer p.w.Close()
	var sink countingSink
	go p.run(&sink)
	sinkHas := func(s string) bool {
		sink.mu.Lock()
		defer sink.mu.Unlock()
		return strings.Contains(sink.buf.String(), s)
	}
	for i := range 50 {
		line := fmt.Sprintf("load_tensors: CPU model buffer size = %d.00 MiB\n", i)
		if _, err := p.w.WriteString(line); err != nil {
			t.Fatal(err)
		}
		p.catchUp(time.Minute)
		if !sinkHas(line) {
			t.Fatalf("after catchUp the sink lacks %q", line)
		}
	}
	t0 := time.Now()
	p.catchUp(time.Minute) // nothing more written: the pipe is read empty
	if d := time.Since(t0); d > 30*time.Second {
		t.Fatalf("catchUp on an empty pipe waited %s", d)
	}
}
