package httpapi

import (
	"net/http"
	"strings"
	"time"

	"github.com/llamatray/llamatray/router/activity"
	"github.com/llamatray/llamatray/router/metrics"
	"github.com/llamatray/llamatray/router/wire"
)

// watchUsage wraps the child's answer body in a scanner that reads its "timings" and "usage" as the
// bytes pass (router/activity): nothing is held back or buffered, and no text is kept. Only JSON
// and SSE answers are read.
func watchUsage(resp *http.Response, t *proxyTarget) {
	t.status = resp.StatusCode
	ct := resp.Header.Get("Content-Type")
	if !strings.HasPrefix(ct, "text/event-stream") && !strings.Contains(ct, "json") {
		return
	}
	resp.Body = activity.NewScanner(resp.Body, func(u *activity.Usage) {
		if u.HasTimings || u.HasUsage {
			t.usage = u
		}
	})
}

// record adds one proxied request to the activity, once its answer has ended. It runs on the
// request's goroutine after the proxy returned, when the scanner is done with t.
func (srv *Server) record(t *proxyTarget, waited time.Duration) {
	srv.o.Activity.Record(activity.Sample{Model: t.model, Status: t.status, Wait: waited, Usage: t.usage})
}

// countRequest adds one model-routed request that ended to the metrics, with what the access log
// has of it: the status the client got, its duration, its queue wait and the answer's usage.
func (srv *Server) countRequest(info *reqInfo, status int, took time.Duration) {
	q := metrics.Request{Model: info.model, Code: status, Duration: took, Leased: info.leased, Wait: info.waited}
	if u := info.usage; u != nil {
		q.TokensIn, q.TokensOut = u.In(), u.Out()
		if u.HasTimings {
			q.HasTTFT = true
			q.TTFT = info.waited + time.Duration(u.Timings.PromptMs*float64(time.Millisecond))
		}
	}
	srv.metrics.Request(q)
}

// activityDoc serves GET /api/activity: per model, the last hour in buckets.
func (srv *Server) activityDoc(w http.ResponseWriter, r *http.Request) {
	wire.Write(w, http.StatusOK, srv.o.Activity.Snapshot())
}
