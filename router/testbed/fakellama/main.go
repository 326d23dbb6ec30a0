// Command fakellama is a fake llama.cpp llama-server for tests of Llamatray's
// process supervisor, engine and router. It parses llama-server's flags,
// binds its HTTP port, "loads" a model (the file must exist but is never
// read), serves llama-server's endpoints with generated text and logs to
// stderr in llama-server's format. With LLAMA_SERVER_ROUTER_PORT set it also
// speaks the router-child protocol: state lines on stdout, and after the load
// "cmd_router_to_child:exit" on stdin (exit 0) or stdin EOF (exit 1).
//
// Behaviour knobs come from FAKE_LLAMA_<NAME> environment variables, then
// from a JSON sidecar "<model file>.fake.json" whose fields override them
// (durations are strings like "250ms" or numbers of milliseconds):
//
//	load_time             100ms  /health answers 503 "Loading model" meanwhile
//	token_delay           2ms    time per generated token
//	tokens                8      tokens per request, capped by max_tokens/n_predict
//	hold_mb               0      MiB allocated and touched after load; freed while sleeping
//	fail_load             false  fail half-way through loading, exit 1
//	crash_after_requests  0      the Nth task request and later ones exit 3 mid-generation
//	ignore_sigterm        false  record SIGTERM and carry on
//	wake_time             0      time a sleeping server takes to wake for a task
//	record                ""     file to append JSON event lines to
//	drop_opening          false  streams lack Anthropic message_start and the OpenAI role chunk
//	                             (llama-server 0.7.0 when the first token is incomplete UTF-8)
//	sim_model_mib         0      on a simulated machine (LLAMATRAY_SIM_MACHINE): the weights
//	sim_kv_mib            0      ... the KV cache
//	sim_layers            32     ... the model's layers; -ngl N puts N of them (and the output layer)
//	                             on the GPUs, split by their memory as llama.cpp does
//
// On a simulated machine the fake prints llama.cpp's buffer lines per device, books what it holds per
// device in the machine's held folder (released while it sleeps and when it exits), and lists the
// machine's GPUs for --list-devices.
//
// Record events: start (args), ready, request (path, model, stream), cancel,
// sleep, wake, signal (signal), exit (code). Test hooks: POST /fake/crash
// (exit 3 at once), POST /fake/hold?mb=N, GET /fake/stats.
//
// Like llama-server it closes the connection after a streamed response,
// answers 404 with a closed connection for unknown routes, and answers a
// request body that is not a JSON object with 500 server_error.
package main

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The version llama-server would report; the build number is a plausible one.
const (
	buildNumber = 6500
	buildCommit = "0fa4e11"
)

func main() {
	opts, err := parseArgs(os.Args[1:])
	if err != nil {
		rawLog("error: %v", err)
		os.Exit(1)
	}
	if opts.help {
		fmt.Print(helpText())
		os.Exit(0)
	}
	if opts.listDevs {
		listDevices(opts.rpc)
		os.Exit(0)
	}
	if opts.version {
		rawLog("version: %d (%s)", buildNumber, buildCommit)
		rawLog("built with %s (fakellama) for %s/%s", runtime.Version(), runtime.GOOS, runtime.GOARCH)
		os.Exit(0)
	}
	logStyle.prefix, logStyle.timestamps = opts.logPrefix, opts.logTimes
	kn, err := loadKnobs(opts.model, os.Getenv)
	if err != nil {
		rawLog("fakellama: %v", err)
		os.Exit(1)
	}
	rec, err := openRecorder(kn.Record)
	if err != nil {
		rawLog("fakellama: %v", err)
		os.Exit(1)
	}
	s := &server{opts: opts, kn: kn, rec: rec, holdMB: kn.HoldMB, modelID: opts.model, aliases: opts.aliases}
	if len(opts.aliases) > 0 {
		s.modelID = opts.aliases[0]
	} else {
		s.aliases = []string{opts.model} // llama-server uses the model's name as its alias
	}
	_, s.child = os.LookupEnv("LLAMA_SERVER_ROUTER_PORT")
	s.rpc = connectRPC(opts.rpc, s.rpcLost)
	rec.write(recordEvent{Event: "start", Args: os.Args})
	s.run()
}

// run is llama-server's main: bind, load, serve until told to stop.
func (s *server) run() {
	logf(lvlInfo, "build_info: build = %d (%s), built with %s (fakellama) for %s/%s", buildNumber, buildCommit, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	logf(lvlInfo, "system_info: n_threads = %d (n_threads_batch = %d) / %d", runtime.NumCPU(), runtime.NumCPU(), runtime.NumCPU())
	// Like llama-server, a --host ending in ".sock" is a unix socket path, and then there is no port.
	network, address := "tcp", net.JoinHostPort(s.opts.host, strconv.Itoa(s.opts.port))
	if strings.HasSuffix(s.opts.host, ".sock") {
		network, address = "unix", s.opts.host
	}
	ln, err := net.Listen(network, address)
	if err != nil {
		srvLog(lvlError, "start", "couldn't bind HTTP server socket, hostname: %s, port: %d", s.opts.host, s.opts.port)
		srvLog(lvlInfo, "operator()", "operator(): cleaning up before exit...")
		srvLog(lvlError, "llama_server", "exiting due to HTTP server error")
		s.exit(1)
	}
	port := 0
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok {
		port = tcp.Port
		s.addr = "http://" + net.JoinHostPort(s.opts.host, strconv.Itoa(port))
	} else {
		if ul, ok := ln.(*net.UnixListener); ok {
			ul.SetUnlinkOnClose(false) // llama-server leaves its socket file behind; so does the fake
		}
		s.addr = "unix://" + s.opts.host
	}
	srvLog(lvlInfo, "init", "initializing HTTP server, hostname: %s, port: %d, http threads: %d", s.opts.host, port, s.nSlots()+2)
	srv := &http.Server{Handler: s.routes(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			srvLog(lvlError, "llama_server", "HTTP server error: %v", err)
			s.exit(1)
		}
	}()

	s.load()
	srvLog(lvlInfo, "llama_server", "model loaded")
	srvLog(lvlInfo, "llama_server", "listening on %s", s.addr)
	if s.child {
		go s.watchStdin()
		s.notifyRouter("ready", s.modelInfo())
	}
	srvLog(lvlInfo, "update_slots", "all slots are idle")
	if s.opts.sleepIdle > 0 {
		go s.idleLoop()
	}
	select {} // every exit goes through s.exit
}

// load simulates loading the model: progress while load_time passes, then
// the memory hold. A missing model file or fail_load ends the process with 1.
func (s *server) load() {
	s.notifyRouter("loading", s.loadingPayload(0))
	srvLog(lvlInfo, "load_model", "loading model '%s'", s.opts.model)
	fi, err := os.Stat(s.opts.model)
	if err != nil {
		logf(lvlError, "gguf_init_from_file: failed to open GGUF file '%s' (%v)", s.opts.model, err)
		s.failLoad("failed to open " + s.opts.model)
	}
	logf(lvlInfo, "llama_model_loader: loaded meta data with 0 key-value pairs and 0 tensors from %s (version GGUF V3 (latest))", s.opts.model)
	const steps = 4
	for i := 1; i <= steps; i++ {
		time.Sleep(s.kn.LoadTime / steps) // simulated load work
		if s.kn.FailLoad && i == steps/2 {
			s.failLoad("fail_load is set for this model")
		}
		if i < steps {
			s.notifyRouter("loading", s.loadingPayload(float64(i)/steps))
		}
	}
	sim := s.simBuffers()
	if sim == nil {
		logf(lvlInfo, "load_tensors:   CPU_Mapped model buffer size = %8.2f MiB", float64(fi.Size())/(1<<20))
	} else {
		sim.print("model")
	}
	mem := allocate(s.kn.HoldMB)
	s.notifyRouter("loading", s.loadingPayload(1))
	compLog(lvlInfo, "cmn", "init", "llama threadpool init, n_threads = %d", runtime.NumCPU())
	logf(lvlInfo, "llama_context: n_ctx         = %d", s.nCtx())
	if sim == nil {
		logf(lvlInfo, "llama_kv_cache:        CPU KV buffer size = %8.2f MiB", float64(s.kn.HoldMB))
	} else {
		sim.print("KV")
		sim.print("compute")
		sim.hold(true)
		s.sim.Store(sim)
	}
	srvLog(lvlInfo, "load_model", "initializing, n_slots = %d, n_ctx_slot = %d, kv_unified = '%t'", s.nSlots(), s.nCtx()/s.nSlots(), s.opts.parallel < 0)
	// Signals are handled from here on, and "ready" is on record before
	// /health turns 200: a test that sees either can rely on both.
	s.watchSignals()
	s.rec.event("ready")
	s.mu.Lock()
	s.held = mem
	s.phase = phaseReady
	s.lastTask = time.Now()
	s.mu.Unlock()
}

// failLoad prints llama-server's load-failure lines and exits 1.
func (s *server) failLoad(why string) {
	logf(lvlError, "llama_model_load: error loading model: %s", why)
	logf(lvlError, "llama_model_load_from_file_impl: failed to load model")
	logf(lvlError, "common_init_from_params: failed to load model '%s'", s.opts.model)
	srvLog(lvlError, "load_model", "failed to load model, '%s'", s.opts.model)
	srvLog(lvlInfo, "operator()", "operator(): cleaning up before exit...")
	srvLog(lvlError, "llama_server", "exiting due to model loading error")
	s.exit(1)
}

// watchSignals handles SIGTERM and SIGINT the way llama-server does once
// loaded: a graceful exit 0, and exit 1 on a second signal. Before load calls
// it, the default action kills the process, as it does llama-server.
func (s *server) watchSignals() {
	ch := make(chan os.Signal, 4)
	signal.Notify(ch, syscall.SIGTERM, os.Interrupt)
	go func() {
		terminating := false
		for sig := range ch {
			name := "SIGINT"
			if sig == syscall.SIGTERM {
				name = "SIGTERM"
			}
			s.rec.write(recordEvent{Event: "signal", Signal: name})
			if sig == syscall.SIGTERM && s.kn.IgnoreSigterm {
				logf(lvlWarn, "fakellama: ignoring %s (ignore_sigterm)", name)
				continue
			}
			if terminating {
				rawLog("Received second interrupt, terminating immediately.")
				s.exit(1)
			}
			terminating = true
			go s.shutdown("")
		}
	}()
}

// watchStdin is the router child's orphan guard: the exit command stops the
// server gracefully (0); end of stdin means the router is gone (exit 1).
func (s *server) watchStdin() {
	srvLog(lvlInfo, "operator()", "child server monitoring thread started, waiting for EOF on stdin...")
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		if strings.Contains(sc.Text(), routerExitCommand) {
			s.shutdown("exit command received, exiting...")
			return
		}
	}
	srvLog(lvlInfo, "operator()", "EOF on stdin detected, forcing shutdown...")
	s.exit(1)
}
