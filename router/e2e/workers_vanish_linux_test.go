package e2e

// Issue #24's worker machine that vanishes mid-request (a power cut, a pulled cable: no FIN, no
// RST): a real `llamatray worker` in a network namespace of its own, joined to this one through a
// switch (two veth pairs and a bridge in a third namespace), and the head (the service, here) with
// a model split onto it and one on this machine. Once the split model's stream flows, the
// switch's port to the worker goes down: from then on nothing crosses, either way, and neither
// kernel hears of the other, while the head's own link stays up (netem and netfilter may be
// missing from the kernel; a port down needs neither). Only the links' TCP keepalive and
// TCP_USER_TIMEOUT can notice. Needs root (or, under CI=true, passwordless sudo), iproute2's ip
// and the real llama-server with ggml-rpc-server beside it.

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/engine"
	"github.com/llamatray/llamatray/router/testbed/ggufwrite"
	"github.com/llamatray/llamatray/router/wire"
	"github.com/llamatray/llamatray/router/worker"
)

// switched joins this process's network namespace (interface here, at addrHere) to a new one, ns
// (interface lt0, at addrNS), through a switch: a bridge in namespace sw, its port lt0 to here and
// its port lt1 to ns. All of it goes when the test ends.
func switched(t *testing.T, sw, ns, here, addrHere, addrNS string) {
	t.Helper()
	addNetns(t, sw)
	addNetns(t, ns)
	ipCmd(t, "link", "add", here, "type", "veth", "peer", "name", "lt0", "netns", sw)
	ipCmd(t, "-n", sw, "link", "add", "lt1", "type", "veth", "peer", "name", "lt0", "netns", ns)
	ipCmd(t, "-n", sw, "link", "add", "br0", "type", "bridge")
	for _, dev := range []string{"lt0", "lt1"} {
		ipCmd(t, "-n", sw, "link", "set", dev, "master", "br0")
		ipCmd(t, "-n", sw, "link", "set", dev, "up")
	}
	ipCmd(t, "-n", sw, "link", "set", "br0", "up")
	ipCmd(t, "addr", "add", addrHere+"/24", "dev", here)
	ipCmd(t, "link", "set", here, "up")
	ipCmd(t, "-n", ns, "addr", "add", addrNS+"/24", "dev", "lt0")
	ipCmd(t, "-n", ns, "link", "set", "lo", "up")
	ipCmd(t, "-n", ns, "link", "set", "lt0", "up")
}

// linkFlags are dev's flags as ip shows them (LOWER_UP: it has a carrier).
func linkFlags(t *testing.T, dev string) string {
	t.Helper()
	out, err := exec.Command("ip", "-o", "link", "show", "dev", dev).CombinedOutput()
	if err != nil {
		t.Fatalf("ip link show %s: %v\n%s", dev, err, out)
	}
	_, flags, _ := strings.Cut(string(out), "<")
	flags, _, _ = strings.Cut(flags, ">")
	return flags
}

// startNetnsWorker runs `llamatray worker` in ns, listening on listen, and waits until it answers
// a check from here.
func startNetnsWorker(t *testing.T, ns, listen, rpc string) {
	t.Helper()
	p := &proc{t: t, name: "worker w"}
	p.cmd = exec.Command("ip", "netns", "exec", ns, discBin(t), "worker", "--listen", listen, "--token", workerToken,
		"--rpc-server", rpc, "--threads", "1", "--name", "w")
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out := &logWriter{t: t, name: p.name}
	p.cmd.Stdout, p.cmd.Stderr = out, out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.done = make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(p.kill) // the rpc-server goes with it (its parent-death signal)
	pollUntil(t, 60*time.Second, "worker w to answer", func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err := worker.Check(ctx, listen, workerToken)
		return err == nil, fmt.Sprint(err)
	})
}

func TestWorkerMachineVanishes(t *testing.T) {
	_, rpc := rpcServerBin(t)
	if !needNetns(t) {
		return
	}
	dropStaleNetns(t)
	id := os.Getpid()
	sw, ns, here := fmt.Sprintf("lt-disc-s-%d", id), fmt.Sprintf("lt-disc-w-%d", id), fmt.Sprintf("ltw%d", id%100000000)
	const addrHere, addrW = "10.232.0.1", "10.232.0.2"
	switched(t, sw, ns, here, addrHere, addrW)
	listen := addrW + ":18090"
	startNetnsWorker(t, ns, listen, rpc)

	ngl := 99
	in := startModels(t, func(id string) ggufwrite.LlamaOptions { return ggufwrite.LlamaOptions{Width: 64, Blocks: 4} },
		[]string{"split", "local"}, func(c *config.Config) {
			c.Workers = map[string]config.Worker{"w": {Address: listen, Token: workerToken}}
			c.Models = map[string]config.Model{"split": {Workers: []string{"w"}, GPULayers: &ngl, CtxSize: 4096}}
		})
	ctx := context.Background()
	if code, body, err := in.chat(ctx, "split", false, 8); err != nil || code != 200 {
		t.Fatalf("split: %d %v %s", code, err, body)
	}
	if w := workersByName(in)["w"]; w.State != wire.WorkerUp || w.Model != "split" {
		t.Fatalf("worker w: %+v, want up, used by split", w)
	}

	// The cut, once tokens flow: the switch's port to the worker goes down (its cable pulled).
	// Nothing crosses any more, either way, and neither side sends a RST or FIN; this machine's
	// own link stays up, as behind a real switch.
	rd := stream(t, ctx, in, "split")
	restored := false
	restore := func() {
		if !restored {
			restored = true
			ipCmd(t, "-n", sw, "link", "set", "lt1", "up")
		}
	}
	ipCmd(t, "-n", sw, "link", "set", "lt1", "down")
	t0 := time.Now()
	t.Cleanup(restore)
	if f := linkFlags(t, here); !strings.Contains(f, "LOWER_UP") {
		t.Fatalf("%s lost its carrier with the worker's cable (%s): the cut is not behind a switch", here, f)
	}
	ended := make(chan string, 1)
	go func() { b, _ := io.ReadAll(rd); ended <- string(b) }()
	select {
	case rest := <-ended:
		d := time.Since(t0)
		t.Logf("the stream ended %s after the cut; its end: %q", d.Round(time.Millisecond), tail(rest, 300))
		if !strings.Contains(rest, "worker w") {
			t.Errorf("the stream's end does not name worker w: %q", tail(rest, 300))
		}
		if d < 3*time.Second {
			t.Errorf("the stream ended %s after the cut: too soon for a timeout (did a RST or FIN cross?)", d)
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("split's stream still runs 15 s after worker w's machine vanished")
	}
	pollUntil(t, 15*time.Second, "split to be failed", func() (bool, string) {
		st := in.state("split")
		return st.State == engine.StateFailed, string(st.State)
	})
	if st := in.state("split"); !strings.Contains(st.Error, "worker w") || st.NextRetry.IsZero() {
		t.Fatalf("split failed with %q (retry %v), want worker w named and a backoff", st.Error, st.NextRetry)
	}
	if w := workersByName(in)["w"]; w.State != wire.WorkerDown || !strings.Contains(w.LastError, "worker w") {
		t.Fatalf("worker w in the status after it vanished: %+v, want down, named", w)
	}

	// Meanwhile: the local model answers, and split's next request fails, naming the worker.
	if code, body, err := in.chat(ctx, "local", false, 4); err != nil || code != 200 {
		t.Fatalf("local while worker w is gone: %d %v %s", code, err, body)
	}
	t1 := time.Now()
	rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	code, body, err := in.chat(rctx, "split", false, 4)
	cancel()
	t.Logf("split while worker w is gone, after %s: %d %v %s", time.Since(t1).Round(time.Millisecond), code, err, strings.TrimSpace(body))
	if err != nil || code < 400 || !strings.Contains(body, "worker w") {
		t.Fatalf("split while worker w is gone: %d %v %s, want an error naming worker w", code, err, body)
	}
	// Past the backoff, a request loads split again: the check of the worker, which does not
	// answer (its SYNs go nowhere), fails it within 15 s too, naming it.
	if next := in.state("split").NextRetry; !next.IsZero() {
		<-time.After(time.Until(next) + 100*time.Millisecond) // a known instant, not a state
	}
	t1 = time.Now()
	rctx, cancel = context.WithTimeout(ctx, 60*time.Second)
	code, body, err = in.chat(rctx, "split", false, 4)
	cancel()
	d := time.Since(t1)
	t.Logf("split past its backoff while worker w is gone, after %s: %d %v %s", d.Round(time.Millisecond), code, err, body[:min(len(body), 300)])
	if err != nil || code < 400 || !strings.Contains(body, "worker w") || d > 15*time.Second {
		t.Fatalf("split past its backoff while worker w is gone: %d %v after %s: %s, want an error naming worker w within 15 s", code, err, d, body)
	}
	if w := workersByName(in)["w"]; w.State != wire.WorkerDown {
		t.Fatalf("worker w in the status while it is gone: %+v, want down", w)
	}

	// The cable back: the worker answers again (its side of the old session timed out too), and
	// split answers again once its backoff has passed.
	restore()
	pollUntil(t, 30*time.Second, "worker w to answer, not busy, after the network came back", func() (bool, string) {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		info, err := worker.Check(cctx, listen, workerToken)
		return err == nil && !info.Busy, fmt.Sprintf("%+v %v", info, err)
	})
	t2 := time.Now()
	pollUntil(t, 120*time.Second, "split to answer again", func() (bool, string) {
		code, body, err := in.chat(ctx, "split", false, 8)
		return err == nil && code == 200, fmt.Sprintf("%d %v %s", code, err, body)
	})
	t.Logf("split answers again %s after the worker did", time.Since(t2).Round(time.Millisecond))
	if w := workersByName(in)["w"]; w.State != wire.WorkerUp || w.Model != "split" {
		t.Fatalf("worker w after it came back: %+v, want up, used by split", w)
	}

	// The cable pulled again while split is loaded but idle: no data waits for an ack on the link
	// (llama-server holds it open between requests), so only its keepalive can notice; split is
	// failed within 15 s all the same, and worker w is down, named.
	restored = false
	ipCmd(t, "-n", sw, "link", "set", "lt1", "down")
	t0 = time.Now()
	pollUntil(t, 15*time.Second, "idle split to be failed with worker w gone", func() (bool, string) {
		st, w := in.state("split"), workersByName(in)["w"]
		return st.State == engine.StateFailed && w.State == wire.WorkerDown, fmt.Sprintf("split %s %q; worker %+v", st.State, st.Error, w)
	})
	d = time.Since(t0)
	st := in.state("split")
	t.Logf("idle split failed %s after the cut: %s", d.Round(time.Millisecond), st.Error)
	if !strings.Contains(st.Error, "worker w") {
		t.Errorf("idle split failed with %q, want worker w named", st.Error)
	}
	if d < 3*time.Second {
		t.Errorf("idle split failed %s after the cut: too soon for a timeout (did a RST or FIN cross?)", d)
	}
	if code, body, err := in.chat(ctx, "local", false, 4); err != nil || code != 200 {
		t.Fatalf("local while worker w is gone again: %d %v %s", code, err, body)
	}
}
