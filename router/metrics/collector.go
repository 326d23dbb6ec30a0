package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/llamatray/llamatray/router/engine"
)

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
