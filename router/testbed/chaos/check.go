package main

import (
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/llamatray/llamatray/router/testbed/bench/harness"
)

// outcome is the class of one request's result.
type outcome int

const (
	served         outcome = iota // a complete answer
	abandoned                     // the client hung up mid-stream on purpose
	queueTimeout                  // a clean 503 with Retry-After after the queue deadline
	crashBackoff                  // a clean 503 with Retry-After for the killed model while it was failed
	killedInFlight                // an error of a request the killed child was serving
	tooLarge                      // 507 model_too_large: never right here, every model fits the limit
	violation                     // anything else
)

var outcomeNames = [...]string{"served", "abandoned", "503 queue timeout", "503 crash backoff", "killed child in flight", "507 too large", "violation"}

func (o outcome) String() string { return outcomeNames[o] }

// pressureEvery is how often the engine samples memory (engine.Options.PressureEvery's default).
const pressureEvery = 2 * time.Second

// graceAfterFail covers requests leased on the killed child just before the engine noticed it died.
const graceAfterFail = 100 * time.Millisecond

// classify decides what r's result is. kill is the SIGKILL (zero when none), failedAt when the
// engine marked that model failed after it.
func classify(r record, kill killInfo, failedAt time.Time, queueTimeoutAfter time.Duration) (outcome, string) {
	res := r.res
	switch {
	case res.Abandoned:
		return abandoned, ""
	case res.OK():
		return served, ""
	case res.Status == http.StatusServiceUnavailable && res.Code == "queue_timeout":
		if res.RetryAfter == "" {
			return violation, "503 queue_timeout without Retry-After"
		}
		if res.Latency < queueTimeoutAfter-50*time.Millisecond {
			return violation, fmt.Sprintf("503 queue_timeout after %s, before the %s queue deadline", res.Latency.Round(time.Millisecond), queueTimeoutAfter)
		}
		return queueTimeout, ""
	case res.Status == http.StatusInsufficientStorage && res.Code == "model_too_large":
		return tooLarge, "507 model_too_large although the model fits memory_limit"
	}
	if kill.pid != 0 && r.model == kill.model && !res.End.Before(kill.at) {
		if res.Status == http.StatusServiceUnavailable && res.Code == "model_load_failed" && res.RetryAfter != "" {
			return crashBackoff, ""
		}
		until := failedAt
		if until.IsZero() {
			until = kill.at
		}
		if res.Start.Before(until.Add(graceAfterFail)) {
			return killedInFlight, ""
		}
	}
	return violation, describe(res)
}

// describe says what went wrong with a result, in one line.
func describe(res harness.Result) string {
	var parts []string
	if res.Status != 0 {
		parts = append(parts, fmt.Sprintf("status %d", res.Status))
	}
	if res.Code != "" {
		parts = append(parts, "code "+res.Code)
	}
	if res.Err != nil {
		parts = append(parts, res.Err.Error())
	}
	if res.Snippet != "" {
		parts = append(parts, "body "+res.Snippet)
	}
	if len(parts) == 0 {
		parts = append(parts, "no answer")
	}
	return strings.Join(parts, "; ")
}

// verdict checks the whole run and lists every violation.
func (run *chaosRun) verdict() (counts map[outcome]int, violations []string) {
	counts = map[outcome]int{}
	failedAt := time.Time{}
	if run.kill.pid != 0 {
		failedAt = run.facts.failedAfter(run.kill.model, run.kill.at)
	}
	shown := 0
	for _, r := range run.records {
		o, why := classify(r, run.kill, failedAt, run.p.queueTimeout)
		counts[o]++
		if o == violation {
			if shown < 20 {
				violations = append(violations, fmt.Sprintf("request %s (%s, stream %v, %s after start): %s", r.id, r.model, r.stream, r.res.Start.Sub(run.wall).Round(time.Millisecond), why))
			}
			shown++
		}
	}
	if shown > 20 {
		violations = append(violations, fmt.Sprintf("… and %d more failed requests", shown-20))
	}
	if n := counts[tooLarge]; n > 0 {
		inPressure := 0
		for _, r := range run.records {
			if o, _ := classify(r, run.kill, failedAt, run.p.queueTimeout); o == tooLarge && run.pressure.samples > 0 &&
				!r.res.End.Before(run.pressure.start) && r.res.Start.Before(run.pressure.end.Add(pressureEvery+500*time.Millisecond)) {
				inPressure++
			}
		}
		violations = append(violations, fmt.Sprintf("%d requests got 507 model_too_large (%d of them while the injected memory pressure lasted or within one engine sample after it) although every model fits memory_limit; a shortage that passes is not \"too large\"", n, inPressure))
	}
	if run.killErr != nil || run.kill.pid == 0 {
		violations = append(violations, fmt.Sprintf("no child was killed: %v", run.killErr))
	}
	if run.p.pressure && (run.pressErr != nil || run.pressure.samples == 0) {
		violations = append(violations, fmt.Sprintf("memory pressure was not injected: %v", run.pressErr))
	}
	for _, ev := range run.facts.stoppingWithLease {
		violations = append(violations, fmt.Sprintf("%s went stopping with %d leases (%q) at %s", ev.Model, ev.Active, ev.Message, ev.Time.Sub(run.wall).Round(time.Millisecond)))
	}
	if run.facts.resyncs > 0 {
		violations = append(violations, fmt.Sprintf("the event subscription lost events %d times: the stopping check is incomplete", run.facts.resyncs))
	}
	if run.facts.maxRunning > 1 {
		violations = append(violations, fmt.Sprintf("%d models held a process at once; the limit leaves room for one", run.facts.maxRunning))
	}
	for id, n := range run.leases {
		if n != 0 {
			violations = append(violations, fmt.Sprintf("%s still holds %d leases after every client finished", id, n))
		}
	}
	for pid, who := range run.pidsLeft {
		violations = append(violations, fmt.Sprintf("process %d (%s) still runs after the service stopped (state %s)", pid, who, harness.ProcState(pid)))
	}
	if len(run.children) > 0 {
		violations = append(violations, fmt.Sprintf("child processes left after the service stopped: %v", run.children))
	}
	if run.stopErr != nil {
		violations = append(violations, fmt.Sprintf("stopping the service: %v", run.stopErr))
	}
	return counts, violations
}

// print writes the figures and the verdict.
func (run *chaosRun) print(w io.Writer, counts map[outcome]int, violations []string) {
	p := run.p
	fmt.Fprintf(w, "\n## Chaos run: %d requests, %d clients, %d models\n\n", len(run.records), p.clients, len(run.models))
	fmt.Fprintf(w, "| model | width×blocks | file | learned footprint |\n| --- | ---: | ---: | ---: |\n")
	for _, m := range run.models {
		fmt.Fprintf(w, "| %s | %d×%d | %s | %s |\n", m.id, m.width, p.blocks, harness.MiB(m.size), harness.MiB(m.learned))
	}
	if run.limit > 0 {
		fmt.Fprintf(w, "\nmemory_limit %s (room for exactly one model), memory_reserve %s, queue_timeout %s, fair_wait %s.\n", harness.MiB(run.limit), harness.MiB(run.reserve), p.queueTimeout, p.fairWait)
	} else {
		fmt.Fprintf(w, "\nmax_loaded 1, memory_reserve %s, queue_timeout %s, fair_wait %s.\n", harness.MiB(run.reserve), p.queueTimeout, p.fairWait)
	}
	byModel := map[string]map[outcome]int{}
	var lat, wait []time.Duration
	missingWait := 0
	for _, r := range run.records {
		o, _ := classify(r, run.kill, run.facts.failedAfter(run.kill.model, run.kill.at), p.queueTimeout)
		if byModel[r.model] == nil {
			byModel[r.model] = map[outcome]int{}
		}
		byModel[r.model][o]++
		if o != served {
			continue
		}
		lat = append(lat, r.res.Latency)
		if e, ok := run.access.get(r.id); ok {
			wait = append(wait, e.wait)
		} else {
			missingWait++
		}
	}
	fmt.Fprintf(w, "\n| model | served | abandoned | 503 queue timeout | 503 crash backoff | killed in flight | 507 too large | other violations |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	ids := make([]string, 0, len(byModel))
	for id := range byModel {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		c := byModel[id]
		fmt.Fprintf(w, "| %s | %d | %d | %d | %d | %d | %d | %d |\n", id, c[served], c[abandoned], c[queueTimeout], c[crashBackoff], c[killedInFlight], c[tooLarge], c[violation])
	}
	fmt.Fprintf(w, "| **all** | %d | %d | %d | %d | %d | %d | %d |\n", counts[served], counts[abandoned], counts[queueTimeout], counts[crashBackoff], counts[killedInFlight], counts[tooLarge], counts[violation])
	f := run.facts
	fmt.Fprintf(w, "\n| figure | value |\n| --- | ---: |\n")
	fmt.Fprintf(w, "| wall time | %s |\n", run.elapsed.Round(time.Millisecond))
	fmt.Fprintf(w, "| answered per second | %.1f |\n", float64(len(run.records))/run.elapsed.Seconds())
	fmt.Fprintf(w, "| loads / evictions / fair-wait drains / pressure unloads | %d / %d / %d / %d |\n", f.loads, f.evictions, f.drains, f.pressure)
	fmt.Fprintf(w, "| most models holding a process at once | %d |\n", f.maxRunning)
	fmt.Fprintf(w, "| queue wait p50 / p99 / max (served, from the access log) | %s / %s / %s ms |\n", harness.Ms(harness.Median(wait)), harness.Ms(harness.Percentile(wait, 99)), harness.Ms(harness.Percentile(wait, 100)))
	fmt.Fprintf(w, "| client latency p50 / p99 (served) | %s / %s ms |\n", harness.Ms(harness.Median(lat)), harness.Ms(harness.Percentile(lat, 99)))
	if run.kill.pid != 0 {
		fmt.Fprintf(w, "| SIGKILL | %s pid %d with %d active, %s into the run |\n", run.kill.model, run.kill.pid, run.kill.active, run.kill.at.Sub(run.wall).Round(time.Millisecond))
	}
	if run.pressure.samples > 0 {
		fmt.Fprintf(w, "| memory pressure | Available read %s (reserve − %s) for %s, %d samples |\n", harness.MiB(run.pressure.available), harness.MiB(run.deficit), run.pressure.end.Sub(run.pressure.start).Round(time.Millisecond), run.pressure.samples)
	}
	fmt.Fprintf(w, "| llama-server PIDs seen / left after stop | %d / %d |\n", len(run.pidsSeen), len(run.pidsLeft))
	if missingWait > 0 {
		fmt.Fprintf(w, "| served requests missing from the access log | %d |\n", missingWait)
	}
	fmt.Fprintf(w, "\nLoad average: %s.\n", harness.LoadAvg())
	if len(violations) == 0 {
		fmt.Fprintf(w, "\nPASS: no violations.\n")
		return
	}
	fmt.Fprintf(w, "\nFAIL: %d violations:\n", len(violations))
	for _, v := range violations {
		fmt.Fprintf(w, "- %s\n", v)
	}
}
