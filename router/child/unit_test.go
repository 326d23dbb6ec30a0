package child

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
)

func TestParseStateLine(t *testing.T) {
	tests := map[string]struct {
		line string
		want stateMsg
		ok   bool
	}{
		"loading with progress": {
			line: `cmd_child_to_router:state:{"state":"loading","payload":{"stages":["text_model"],"current":"text_model","value":0.5}}`,
			want: stateMsg{State: "loading", Progress: 0.5, HasProgress: true}, ok: true,
		},
		"loading progress above one is clamped": {
			line: `cmd_child_to_router:state:{"state":"loading","payload":{"value":1.7}}`,
			want: stateMsg{State: "loading", Progress: 1, HasProgress: true}, ok: true,
		},
		"loading without value": {
			line: `cmd_child_to_router:state:{"state":"loading","payload":{"stages":[]}}`,
			want: stateMsg{State: "loading"}, ok: true,
		},
		"ready with model payload": {
			line: `cmd_child_to_router:state:{"state":"ready","payload":{"id":"m","object":"model"}}`,
			want: stateMsg{State: "ready"}, ok: true,
		},
		"ready after wake, null payload": {
			line: `cmd_child_to_router:state:{"state":"ready","payload":null}`,
			want: stateMsg{State: "ready"}, ok: true,
		},
		"sleeping without payload": {
			line: `cmd_child_to_router:state:{"state":"sleeping"}`,
			want: stateMsg{State: "sleeping"}, ok: true,
		},
		"payload that is not an object": {
			line: `cmd_child_to_router:state:{"state":"loading","payload":"x"}`,
			want: stateMsg{State: "loading"}, ok: true,
		},
		"ordinary log line":   {line: "main: model loaded"},
		"prefix not at start": {line: `x cmd_child_to_router:state:{"state":"ready"}`},
		"malformed json":      {line: `cmd_child_to_router:state:{"state":`},
		"no state":            {line: `cmd_child_to_router:state:{"payload":{}}`},
		"empty":               {line: ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, ok := parseStateLine(tc.line)
			if ok != tc.ok || got != tc.want {
				t.Fatalf("parseStateLine(%q) = %+v, %v; want %+v, %v", tc.line, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestIsBindFailure(t *testing.T) {
	tests := map[string]bool{
		"start: couldn't bind HTTP server socket, hostname: 127.0.0.1, port: 8080":                    true,
		"listen tcp 127.0.0.1:8080: bind: address already in use":                                     true,
		"Only one usage of each socket address (protocol/network address/port) is normally permitted": true,
		"main: HTTP server is listening, hostname: 127.0.0.1, port: 8080":                             false,
		"llama_model_load: error loading model: fail_load is set for this model":                      false,
		"": false,
	}
	for line, want := range tests {
		if got := isBindFailure(line); got != want {
			t.Errorf("isBindFailure(%q) = %v, want %v", line, got, want)
		}
	}
}

func TestRing(t *testing.T) {
	tests := map[string]struct {
		size, add int
		want      []string
	}{
		"empty":      {size: 3, add: 0, want: nil},
		"partial":    {size: 3, add: 2, want: []string{"0", "1"}},
		"exact":      {size: 3, add: 3, want: []string{"0", "1", "2"}},
		"wrapped":    {size: 3, add: 7, want: []string{"4", "5", "6"}},
		"size one":   {size: 1, add: 5, want: []string{"4"}},
		"wrap twice": {size: 2, add: 4, want: []string{"2", "3"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := newRing(tc.size)
			for i := range tc.add {
				r.add(fmt.Sprint(i))
			}
			if got := r.snapshot(); !slices.Equal(got, tc.want) {
				t.Fatalf("snapshot = %q, want %q", got, tc.want)
			}
			if tc.add > 0 {
				if got := r.tail(1); len(got) != 1 || got[0] != tc.want[len(tc.want)-1] {
					t.Fatalf("tail(1) = %q, want the newest line %q", got, tc.want[len(tc.want)-1])
				}
			}
		})
	}
}

// TestLineSink checks line splitting across writes, CRLF, and state-line routing.
func TestLineSink(t *testing.T) {
	p := &proc{
		ring:    newRing(10),
		started: make(chan struct{}),
		quit:    make(chan struct{}),
		states:  make(chan stateMsg, 4),
		log:     discardLogger(),
	}
	close(p.started)
	s := &lineSink{p: p}
	for _, chunk := range []string{
		"first li", "ne\r\nsecond\n",
		`cmd_child_to_router:state:{"state":"loading","pay`, `load":{"value":0.25}}` + "\n",
		"start: couldn't bind HTTP server socket\nunterminated",
	} {
		if n, err := s.Write([]byte(chunk)); n != len(chunk) || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	if got, want := p.ring.snapshot(), []string{"first line", "second", "start: couldn't bind HTTP server socket"}; !slices.Equal(got, want) {
		t.Fatalf("ring = %q, want %q", got, want)
	}
	select {
	case m := <-p.states:
		if m != (stateMsg{State: "loading", Progress: 0.25, HasProgress: true}) {
			t.Fatalf("state = %+v", m)
		}
	default:
		t.Fatal("the state line did not reach the supervisor")
	}
	if !p.bindFailed.Load() {
		t.Fatal("bind failure line not noticed")
	}
	if l, ok := s.takePartial(); !ok || l != "unterminated" {
		t.Fatalf("takePartial = %q, %v", l, ok)
	}
	if _, ok := s.takePartial(); ok {
		t.Fatal("takePartial twice returned a line")
	}
	if p.lastOutput.Load() == 0 {
		t.Fatal("output activity not recorded")
	}
}

func TestSpecValidation(t *testing.T) {
	tests := map[string]struct {
		spec Spec
		want string
	}{
		"no binary":       {spec: Spec{Model: "m"}, want: "no llama-server binary"},
		"port in args":    {spec: Spec{Binary: "x", Args: []string{"-m", "a", "--port", "9"}}, want: `"--port"`},
		"host= in args":   {spec: Spec{Binary: "x", Args: []string{"--host=0.0.0.0"}}, want: `"--host=0.0.0.0"`},
		"bad router port": {spec: Spec{Binary: "x", RouterPort: 70000}, want: "router port 70000"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			called := false
			c, err := Start(tc.spec, func(Event) { called = true })
			if err == nil || c != nil {
				t.Fatalf("Start = %v, %v; want an error", c, err)
			}
			if !errors.Is(err, ErrStart) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q: want ErrStart mentioning %s", err, tc.want)
			}
			if called {
				t.Fatal("onEvent called after a failed Start")
			}
		})
	}
	s, err := Spec{Binary: "x"}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if s.RouterPort != 1 || s.LoadTimeout != DefaultLoadTimeout || s.StopTimeout != DefaultStopTimeout ||
		s.HealthInterval != DefaultHealthInterval || s.LogLines != DefaultLogLines || s.Addrs == nil || s.Logger == nil {
		t.Fatalf("defaults not applied: %+v", s)
	}
}

func TestEventKindString(t *testing.T) {
	want := map[EventKind]string{Loading: "loading", Ready: "ready", Sleeping: "sleeping", Woke: "woke", Exited: "exited", 0: "EventKind(0)"}
	for k, s := range want {
		if k.String() != s {
			t.Errorf("%d.String() = %q, want %q", int(k), k.String(), s)
		}
	}
}

// TestTCPPortsConcurrent takes many ports at once from many goroutines:
// no port may be handed out twice while held, and each must be bindable.
func TestTCPPortsConcurrent(t *testing.T) {
	a := newTCPPorts()
	const workers, each = 8, 40
	var (
		mu    sync.Mutex // guards held
		held  = map[int]int{}
		wg    sync.WaitGroup
		errCh = make(chan error, workers)
	)
	for w := range workers {
		wg.Go(func() {
			for range each {
				ad, err := a.Get()
				if err != nil {
					errCh <- err
					return
				}
				p := ad.Port
				mu.Lock()
				prev, dup := held[p]
				held[p] = w
				mu.Unlock()
				if dup {
					errCh <- fmt.Errorf("port %d handed to worker %d while worker %d holds it", p, w, prev)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errCh)
	for err := range errCh {
		t.Fatal(err)
	}
	if len(held) != workers*each {
		t.Fatalf("got %d distinct ports, want %d", len(held), workers*each)
	}
	// A held port is free on the system, so a child can bind it.
	for p := range held {
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			t.Fatalf("port %d from Get cannot be bound: %v", p, err)
		}
		l.Close()
		break
	}
	// After Put, the allocator forgets the port.
	for p := range held {
		a.Put(Addr{Port: p})
	}
	a.Put(Addr{Port: 1}) // not held: a no-op
	a.mu.Lock()
	n := len(a.inUse)
	a.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d ports still marked in use after Put", n)
	}
}
