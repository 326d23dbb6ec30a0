package main

import (
	"context"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// phase is the model's lifecycle as the HTTP side sees it.
type phase int

const (
	phaseLoading  phase = iota // /health answers 503
	phaseReady                 // serving
	phaseSleeping              // model freed; the next task wakes it
)

// server is one fake llama-server process.
type server struct {
	opts    options
	kn      knobs
	rec     *recorder
	child   bool     // LLAMA_SERVER_ROUTER_PORT is set: speak the router protocol
	modelID string   // the first alias, else the model path
	aliases []string // --alias names, else the model path
	addr    string   // listening address, http://host:port
	exiting atomic.Bool
	rpc     []*rpcEnd // the --rpc servers, connected at start

	mu         sync.Mutex                 // guards every field below
	phase      phase                      // loading, ready or sleeping
	transition chan struct{}              // non-nil while entering or leaving sleep; closed when done
	lastTask   time.Time                  // when the last task began or ended (idle timer)
	inFlight   int                        // task requests being served
	begun      int                        // task requests begun, ever
	completed  int                        // task requests finished, cancelled or not
	cancels    int                        // task requests whose client went away
	holdMB     int                        // memory the model should hold while awake
	sim        atomic.Pointer[simBuffers] // on a simulated machine: what it holds per device; set once loaded
	held       [][]byte                   // the memory held now
	promptN    int64                      // prompt tokens processed, ever (metrics)
	predictedN int64                      // tokens generated, ever (metrics)
}

// task is one task-creating request in flight.
type task struct {
	id      int // task id in log lines
	ordinal int // 1-based count of task requests begun, including this one
	slot    int
	start   time.Time
	prompt  int // prompt tokens
	ctx     context.Context
}

// nSlots is the number of parallel slots.
func (s *server) nSlots() int {
	if s.opts.parallel > 0 {
		return s.opts.parallel
	}
	return 4
}

// nCtx is the total context size.
func (s *server) nCtx() int {
	if s.opts.ctxSize > 0 {
		return s.opts.ctxSize
	}
	return 4096
}

// isLoading reports whether the initial load is still running.
func (s *server) isLoading() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.phase == phaseLoading
}

// isSleeping reports whether the model is asleep (also while it wakes).
func (s *server) isSleeping() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.phase == phaseSleeping
}

// beginTask registers a task request, first waking the model if it sleeps.
func (s *server) beginTask(ctx context.Context, prompt int) *task {
	for {
		s.mu.Lock()
		if wait := s.transition; wait != nil {
			s.mu.Unlock()
			<-wait
			continue
		}
		if s.phase == phaseSleeping {
			done := make(chan struct{})
			s.transition = done
			hold := s.holdMB
			s.mu.Unlock()
			s.wake(hold)
			s.mu.Lock()
			s.phase = phaseReady
			s.lastTask = time.Now()
			s.transition = nil
			s.mu.Unlock()
			close(done)
			continue
		}
		s.inFlight++
		s.begun++
		s.lastTask = time.Now()
		t := &task{id: s.begun - 1, ordinal: s.begun, slot: (s.begun - 1) % s.nSlots(), start: time.Now(), prompt: prompt, ctx: ctx}
		s.promptN += int64(prompt)
		s.mu.Unlock()
		slotLog("launch_slot_", t.slot, t.id, "processing task")
		return t
	}
}

// endTask unregisters a task request.
func (s *server) endTask(t *task, predicted int, cancelled bool) {
	s.mu.Lock()
	s.inFlight--
	s.completed++
	s.predictedN += int64(predicted)
	if cancelled {
		s.cancels++
	}
	s.lastTask = time.Now()
	idle := s.inFlight == 0
	s.mu.Unlock()
	if cancelled {
		srvLog(lvlInfo, "cancel_tasks", "cancel task, id_task = %d", t.id)
		s.rec.event("cancel")
	}
	slotLog("release", t.slot, t.id, "stop processing: n_tokens = %d, truncated = 0", t.prompt+predicted)
	if idle {
		srvLog(lvlInfo, "update_slots", "all slots are idle")
	}
}

// wake reloads a sleeping model. It runs with s.transition set, so nothing
// else changes the phase meanwhile.
func (s *server) wake(holdMB int) {
	compLog(lvlInfo, "que", "start_loop", "exiting sleeping state")
	srvLog(lvlInfo, "handle_sleep", "server is exiting sleeping state")
	srvLog(lvlInfo, "load_model", "loading model '%s'", s.opts.model)
	s.rec.event("wake")
	s.notifyRouter("loading", s.loadingPayload(0))
	time.Sleep(s.kn.WakeTime) // simulated reload work
	mem := allocate(holdMB)
	s.mu.Lock()
	s.held = mem
	s.mu.Unlock()
	if sim := s.sim.Load(); sim != nil {
		sim.hold(true)
	}
	s.notifyRouter("loading", s.loadingPayload(1))
	s.notifyRouter("ready", nil)
}

// idleLoop puts the model to sleep after opts.sleepIdle without tasks.
func (s *server) idleLoop() {
	idle := s.opts.sleepIdle
	tick := min(max(idle/10, 10*time.Millisecond), 250*time.Millisecond)
	t := time.NewTicker(tick)
	defer t.Stop()
	for range t.C {
		s.mu.Lock()
		due := s.phase == phaseReady && s.transition == nil && s.inFlight == 0 && time.Since(s.lastTask) >= idle
		if !due {
			s.mu.Unlock()
			continue
		}
		done := make(chan struct{})
		s.transition = done
		s.held = nil // the model, contexts and KV cache are freed
		s.mu.Unlock()
		if sim := s.sim.Load(); sim != nil {
			sim.hold(false)
		}

		s.rec.event("sleep") // before the router hears of it, so a test that heard it finds it
		s.notifyRouter("sleeping", nil)
		compLog(lvlInfo, "que", "start_loop", "entering sleeping state")
		srvLog(lvlInfo, "handle_sleep", "server is entering sleeping state")
		debug.FreeOSMemory()

		s.mu.Lock()
		s.phase = phaseSleeping
		s.transition = nil
		s.mu.Unlock()
		close(done)
	}
}

// setHold changes how much memory the model holds while awake.
func (s *server) setHold(mb int) {
	s.mu.Lock()
	s.holdMB = mb
	awake := s.phase == phaseReady && s.transition == nil
	s.mu.Unlock()
	if !awake {
		return // applied at the next wake
	}
	mem := allocate(mb)
	s.mu.Lock()
	var old [][]byte
	if s.phase == phaseReady && s.transition == nil && s.holdMB == mb {
		old, s.held = s.held, mem
	}
	s.mu.Unlock()
	if old != nil {
		debug.FreeOSMemory()
	}
}

// allocate returns mb MiB of memory with every page written, so the
// process's resident set really grows.
func allocate(mb int) [][]byte {
	const chunk = 1 << 20
	mem := make([][]byte, mb)
	for i := range mem {
		b := make([]byte, chunk)
		for j := 0; j < chunk; j += 4096 {
			b[j] = 1
		}
		mem[i] = b
	}
	return mem
}

// heldMB reports the memory held now, in MiB.
func (s *server) heldMB() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.held)
}

// exit ends the process with code after recording it. Only the first caller
// proceeds; later callers block until the process is gone.
func (s *server) exit(code int) {
	if !s.exiting.CompareAndSwap(false, true) {
		select {}
	}
	c := code
	s.rec.write(recordEvent{Event: "exit", Code: &c})
	if sim := s.sim.Load(); sim != nil {
		sim.release()
	}
	os.Exit(code)
}

// shutdown is llama-server's graceful exit: log reason (if any), clean up
// and exit 0.
func (s *server) shutdown(reason string) {
	if reason != "" {
		srvLog(lvlInfo, "operator()", "%s", reason)
	}
	srvLog(lvlInfo, "operator()", "operator(): cleaning up before exit...")
	s.exit(0)
}

// crash exits at once with code 3, as a crashed server would end.
func (s *server) crash(why string) {
	logf(lvlError, "fakellama: crashing: %s", why)
	s.exit(3)
}

// loadingPayload is the payload of a "loading" state line.
func (s *server) loadingPayload(v float64) obj {
	stages := []string{"text_model"}
	if s.opts.mmproj != "" {
		stages = append(stages, "mmproj_model")
	}
	return obj{{"stages", stages}, {"current", "text_model"}, {"value", float(v)}}
}
