// Package metrics is Llamatray's Prometheus exposition (GET /metrics without a model): per model,
// the requests by status, tokens, time to first token, queue wait and duration, fed by the HTTP
// layer where each request ends; loads, load time, unloads and sleeps by reason, fed from the
// engine's events; and the state, memory, queue and budget read from the engine at scrape time.
package metrics

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/llamatray/llamatray/router/engine"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Source is what the metrics read from the engine; *engine.Engine satisfies it.
type Source interface {
	Models() []engine.ModelStatus
	Budget() engine.Budget
	// SubscribeTo returns a channel of the engine's events of these kinds and a function that
	// ends the subscription.
	SubscribeTo(kinds ...engine.EventKind) (<-chan engine.Event, func())
}

// Request is one model-routed request as it ended, with what the access log knows of it.
type Request struct {
	Model    string        // canonical ID
	Code     int           // the status the client got (499: it left; 502: aborted mid-answer)
	Duration time.Duration // from its arrival to its end
	Leased   bool          // it got a lease on the model, so Wait is its queue wait
	Wait     time.Duration // queued or loading
	// What the answer reported of itself (llama-server's timings and usage); Has* false when not.
	TokensIn, TokensOut int64
	HasTTFT             bool
	TTFT                time.Duration // the queue wait plus llama-server's prompt time, as /api/activity
}

// Metrics holds every metric and the registry that exposes them. Its methods are safe for
// concurrent use.
type Metrics struct {
	reg     *prometheus.Registry
	handler http.Handler

	requests    *prometheus.CounterVec
	tokensIn    *prometheus.CounterVec
	tokensOut   *prometheus.CounterVec
	ttft        *prometheus.HistogramVec
	queueWait   *prometheus.HistogramVec
	duration    *prometheus.HistogramVec
	loads       *prometheus.CounterVec
	loadSeconds *prometheus.HistogramVec
	unloads     *prometheus.CounterVec
	sleeps      *prometheus.CounterVec
	series      sync.Map // model ID → *series
}

// New builds the metrics of the engine src (nil: only the request metrics and the Go runtime's).
func New(src Source) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: name, Help: help}, labels)
		m.reg.MustRegister(c)
		return c
	}
	histogram := func(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
		h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: name, Help: help, Buckets: buckets}, labels)
		m.reg.MustRegister(h)
		return h
	}
	m.requests = counter("requests_total", "Model-routed requests by the status the client got.", "model", "code")
	m.tokensIn = counter("tokens_in_total", "Prompt tokens, as the answers reported them.", "model")
	m.tokensOut = counter("tokens_out_total", "Generated tokens, as the answers reported them.", "model")
	m.ttft = histogram("time_to_first_token_seconds", "Queue wait plus llama-server's prompt time, for answers that reported timings.",
		[]float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120}, "model")
	m.queueWait = histogram("queue_wait_seconds", "Time a request waited for its model (queue and load).",
		[]float64{.001, .01, .1, .5, 1, 2.5, 5, 10, 30, 60, 300}, "model")
	m.duration = histogram("request_duration_seconds", "Model-routed requests from arrival to the answer's end.",
		[]float64{.01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}, "model")
	m.loads = counter("loads_total", "Loads that ended, by result: loaded, failed, or stopped before ready.", "model", "result")
	m.loadSeconds = histogram("load_duration_seconds", "Time from a load's start to ready, for loads that succeeded.",
		[]float64{.5, 1, 2, 5, 10, 20, 30, 60, 120, 300}, "model")
	m.unloads = counter("unloads_total", "Running models stopped, by reason: idle, memory_pressure, evicted, asked, over_limit, shutdown, crashed, other.", "model", "reason")
	m.sleeps = counter("sleeps_total", "Times a model's llama-server went to sleep (its --sleep-idle-seconds).", "model", "reason")
	if src != nil {
		m.reg.MustRegister(engineCollector{src: src})
	}
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.handler = promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
	return m
}

const namespace = "llamatray"

// ServeHTTP answers the Prometheus text exposition.
func (m *Metrics) ServeHTTP(w http.ResponseWriter, r *http.Request) { m.handler.ServeHTTP(w, r) }

// Request counts one model-routed request that ended. It does no I/O; the model's series lock is
// held for lookups in its cache and atomic adds.
func (m *Metrics) Request(q Request) {
	if m == nil || q.Model == "" {
		return
	}
	s := m.seriesOf(q.Model)
	s.mu.Lock()
	defer s.mu.Unlock()
	requests := s.byCode[q.Code]
	if requests == nil {
		requests = m.requests.WithLabelValues(q.Model, strconv.Itoa(q.Code))
		s.byCode[q.Code] = requests
	}
	requests.Inc()
	cached(&s.duration, m.duration, q.Model).Observe(q.Duration.Seconds())
	if q.Leased {
		cached(&s.queueWait, m.queueWait, q.Model).Observe(q.Wait.Seconds())
	}
	if q.TokensIn > 0 {
		cached(&s.tokensIn, m.tokensIn, q.Model).Add(float64(q.TokensIn))
	}
	if q.TokensOut > 0 {
		cached(&s.tokensOut, m.tokensOut, q.Model).Add(float64(q.TokensOut))
	}
	if q.HasTTFT {
		cached(&s.ttft, m.ttft, q.Model).Observe(q.TTFT.Seconds())
	}
}

// cached returns the series *p, looked up in vec for model the first time.
func cached[T comparable](p *T, vec interface{ WithLabelValues(...string) T }, model string) T {
	var none T
	if *p == none {
		*p = vec.WithLabelValues(model)
	}
	return *p
}

// series are one model's request metrics, each looked up in its vector once, by its first value
// (the vectors hash the labels on every lookup): a series appears in the exposition from then on.
type series struct {
	mu                        sync.Mutex // guards every field
	byCode                    map[int]prometheus.Counter
	duration, queueWait, ttft prometheus.Observer
	tokensIn, tokensOut       prometheus.Counter
}

func (m *Metrics) seriesOf(model string) *series {
	if s, ok := m.series.Load(model); ok {
		return s.(*series)
	}
	s, _ := m.series.LoadOrStore(model, &series{byCode: map[int]prometheus.Counter{}})
	return s.(*series)
}

// Watch feeds the load, unload and sleep counters from src's events on one goroutine until the
// returned stop is called (or the engine closes the subscription); stop waits for that goroutine
// and may be called more than once. The subscription is made before Watch returns.
func (m *Metrics) Watch(src Source) (stop func()) {
	ch, cancel := src.SubscribeTo(engine.EventState) // the feed counts state changes only
	done := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		f := newFeed(m)
		for {
			select {
			case <-done:
				return
			case ev, ok := <-ch:
				if !ok {
					return
				}
				f.event(ev)
			}
		}
	}()
	return sync.OnceFunc(func() {
		close(done)
		cancel()
		<-exited
	})
}

// feed turns the engine's state events into load, unload and sleep counts. Only Watch's goroutine
// uses it, so it needs no lock.
type feed struct {
	m       *Metrics
	state   map[string]engine.State // each model's last state seen; absent before its first event
	loading map[string]time.Time    // when each loading model's load started, by its event's time
}

func newFeed(m *Metrics) *feed {
	return &feed{m: m, state: map[string]engine.State{}, loading: map[string]time.Time{}}
}

// event applies one engine event. Only "state" events move a model; a model first seen in a state
// other than loading counts nothing for the move into it (its start was before the subscription).
func (f *feed) event(ev engine.Event) {
	if ev.Kind != "state" || ev.Model == "" {
		return
	}
	prev, seen := f.state[ev.Model]
	next := ev.State
	f.state[ev.Model] = next
	if seen && prev == next {
		return // progress, a pin, a drain: no move
	}
	m, id := f.m, ev.Model
	if prev == engine.StateLoading {
		start, ok := f.loading[id]
		delete(f.loading, id)
		switch next {
		case engine.StateLoaded, engine.StateSleeping:
			m.loads.WithLabelValues(id, "loaded").Inc()
			if ok && !ev.Time.Before(start) {
				m.loadSeconds.WithLabelValues(id).Observe(ev.Time.Sub(start).Seconds())
			}
		case engine.StateFailed:
			m.loads.WithLabelValues(id, "failed").Inc()
		default:
			m.loads.WithLabelValues(id, "stopped").Inc()
		}
	}
	switch next {
	case engine.StateLoading:
		f.loading[id] = ev.Time
	case engine.StateStopping:
		m.unloads.WithLabelValues(id, stopReason(ev.Cause)).Inc()
	case engine.StateSleeping:
		m.sleeps.WithLabelValues(id, "idle").Inc()
	case engine.StateFailed:
		if prev == engine.StateLoaded || prev == engine.StateSleeping {
			m.unloads.WithLabelValues(id, "crashed").Inc()
		}
	case engine.StateUnloaded:
		if prev == engine.StateLoaded || prev == engine.StateSleeping {
			m.unloads.WithLabelValues(id, "other").Inc() // its child ended without being stopped
		}
	}
}

// stopReason maps the cause of the engine's event into stopping to a reason label.
func stopReason(c engine.Cause) string {
	switch c {
	case engine.CauseIdle:
		return "idle"
	case engine.CausePressure:
		return "memory_pressure"
	case engine.CauseEvicted, engine.CauseFairWait:
		return "evicted"
	case engine.CauseAsked, engine.CauseForced:
		return "asked"
	case engine.CauseOverLimit:
		return "over_limit"
	case engine.CauseShutdown:
		return "shutdown"
	}
	return "other"
}

// states are the values of llamatray_model_state's state label, each model having one at 1.
var states = []engine.State{engine.StateUnloaded, engine.StateLoading, engine.StateLoaded,
	engine.StateSleeping, engine.StateStopping, engine.StateFailed}

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(prometheus.BuildFQName(namespace, "", name), help, labels, nil)
}

var (
	descState       = desc("model_state", "1 for the state the model is in, 0 for the others.", "model", "state")
	descActive      = desc("model_active_requests", "Requests in flight on the model (leases held).", "model")
	descQueued      = desc("model_queued_requests", "Requests waiting for the model.", "model")
	descMemory      = desc("model_memory_bytes", "What the model's llama-server holds now (measured), 0 when not running.", "model")
	descDevice      = desc("model_device_memory_bytes", "What the running model holds, or is reserved to hold, on each GPU device.", "model", "device")
	descLimit       = desc("budget_limit_bytes", "The memory Llamatray may use for models.")
	descUsed        = desc("budget_used_bytes", "The memory reserved by models.")
	descFree        = desc("budget_free_bytes", "The budget's limit less what models reserve.")
	descMeasured    = desc("budget_measured_bytes", "What models really hold now (measured RAM and VRAM).")
	descLoaded      = desc("loaded_models", "Models running now.")
	descMaxLoaded   = desc("max_loaded_models", "The most models that may run at once (max_loaded), 0 when unbounded.")
	descDevTotal    = desc("device_total_bytes", "A GPU device's memory.", "device")
	descDevLimit    = desc("device_budget_limit_bytes", "What models may hold on a GPU device now.", "device")
	descDevUsed     = desc("device_budget_used_bytes", "What models reserve on a GPU device.", "device")
	descDevFree     = desc("device_budget_free_bytes", "A GPU device's budget limit less what models reserve, never below 0.", "device")
	descDevMeasured = desc("device_budget_measured_bytes", "What models report they hold on a GPU device.", "device")
)

// engineCollector reads the gauges from the engine at scrape time: Models and Budget take the
// engine's lock for a copy and do no I/O.
type engineCollector struct{ src Source }

func (c engineCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descState, descActive, descQueued, descMemory, descDevice, descLimit, descUsed,
		descFree, descMeasured, descLoaded, descMaxLoaded, descDevTotal, descDevLimit, descDevUsed, descDevFree, descDevMeasured} {
		ch <- d
	}
}

func (c engineCollector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	for _, m := range c.src.Models() {
		for _, s := range states {
			v := 0.0
			if m.State == s {
				v = 1
			}
			gauge(descState, v, m.ID, string(s))
		}
		gauge(descActive, float64(m.Active), m.ID)
		gauge(descQueued, float64(m.Queued), m.ID)
		gauge(descMemory, float64(m.MemoryBytes), m.ID)
		for dev, n := range m.HeldGPU {
			gauge(descDevice, float64(n), m.ID, dev)
		}
	}
	b := c.src.Budget()
	gauge(descLimit, float64(b.Limit))
	gauge(descUsed, float64(b.Used))
	gauge(descFree, float64(b.Free))
	gauge(descMeasured, float64(b.Measured))
	gauge(descLoaded, float64(b.Loaded))
	gauge(descMaxLoaded, float64(b.MaxLoaded))
	for _, d := range b.Devices {
		gauge(descDevTotal, float64(d.Total), d.Name)
		gauge(descDevLimit, float64(d.Limit), d.Name)
		gauge(descDevUsed, float64(d.Used), d.Name)
		gauge(descDevFree, float64(max(d.Limit-d.Used, 0)), d.Name)
		gauge(descDevMeasured, float64(d.Measured), d.Name)
	}
}
