package httpapi

import (
	"cmp"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/llamatray/llamatray/router/engine"
	"github.com/llamatray/llamatray/router/hub"
	"github.com/llamatray/llamatray/router/wire"
)

// coalescer throttles engine events to at most one per model per window. The first event of a model
// after a quiet window goes out at once; later ones are merged into one pending event — latest state,
// latest active count, latest message — sent when the window ends. Because a model's changes merge
// into one event, a lease change can never overtake a state change of the same model. Events without
// a model (catalog, pressure, resync) flush everything pending first, then pass through.
// It is used by one goroutine and needs no lock.
type coalescer struct {
	window  time.Duration
	lastOut map[string]time.Time     // when each model last emitted
	pending map[string]*engine.Event // merged events not yet sent
}

func newCoalescer(window time.Duration) *coalescer {
	return &coalescer{window: window, lastOut: map[string]time.Time{}, pending: map[string]*engine.Event{}}
}

// add takes one event and returns what to send now.
func (c *coalescer) add(ev engine.Event, now time.Time) []engine.Event {
	if ev.Model == "" {
		return append(c.flush(now, true), ev)
	}
	if p, ok := c.pending[ev.Model]; ok {
		mergeEvent(p, ev)
		return nil
	}
	if last, ok := c.lastOut[ev.Model]; ok && now.Sub(last) < c.window {
		e := ev
		c.pending[ev.Model] = &e
		return nil
	}
	c.lastOut[ev.Model] = now
	return []engine.Event{ev}
}

// mergeEvent folds a later event of the same model into a pending one. The result carries the latest
// state, count and time. Its kind stays "state" when the window held a state change, and a bare
// lease change does not hide a queue or pressure event; a lease change keeps the earlier message,
// while a new state change brings its own.
func mergeEvent(p *engine.Event, ev engine.Event) {
	prev := *p
	*p = ev
	if ev.State == "" {
		p.State = prev.State
	}
	if ev.Kind == "state" {
		return
	}
	if prev.Kind == "state" || (ev.Kind == "lease" && prev.Kind != "lease") {
		p.Kind = prev.Kind
	}
	if ev.Message == "" {
		p.Message = prev.Message
	}
}

// flush returns pending events whose window ended (all of them with force), in sequence order.
func (c *coalescer) flush(now time.Time, force bool) []engine.Event {
	var out []engine.Event
	for m, p := range c.pending {
		if force || !now.Before(c.lastOut[m].Add(c.window)) {
			out = append(out, *p)
			delete(c.pending, m)
			c.lastOut[m] = now
		}
	}
	for m, t := range c.lastOut {
		if _, ok := c.pending[m]; !ok && now.Sub(t) >= c.window {
			delete(c.lastOut, m) // quiet again: its next event goes out at once
		}
	}
	slices.SortFunc(out, func(a, b engine.Event) int { return cmp.Compare(a.Seq, b.Seq) })
	return out
}

// next reports when the earliest pending event is due.
func (c *coalescer) next() (time.Time, bool) {
	var at time.Time
	for m := range c.pending {
		if t := c.lastOut[m].Add(c.window); at.IsZero() || t.Before(at) {
			at = t
		}
	}
	return at, !at.IsZero()
}

// startSSE sends the headers of a server-sent event stream, unbuffered by proxies, and status 200.
func startSSE(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
}

// sseStream is what one SSE endpoint makes of engine and Hub events; serveSSE is the one loop that
// serves each (/models/events, /models/sse).
type sseStream interface {
	engineEvent(ev engine.Event, now time.Time) []byte // what to send now for an engine event
	pullEvent(ev hub.Event) []byte                     // what to send for a Hub download's change
	due(now time.Time, all bool) []byte                // events held back whose time came (all: every one)
	next() (time.Time, bool)                           // when the next event held back is due
}

// serveSSE streams engine and Hub events as s renders them, after hello, with a keep-alive comment
// when nothing happened for a while, until the client goes away or the engine's events end.
func (srv *Server) serveSSE(w http.ResponseWriter, r *http.Request, s sseStream, hello string) {
	ch, cancel := srv.o.Engine.Subscribe()
	defer cancel()
	var pulls <-chan hub.Event // none when the Hub is off
	if srv.o.Hub != nil && srv.o.Hub.Manager != nil {
		ch, stop := srv.o.Hub.Manager.Subscribe()
		defer stop()
		pulls = ch
	}
	startSSE(w)
	rc := http.NewResponseController(w)
	send := func(buf []byte) bool {
		if len(buf) == 0 {
			return true
		}
		_, err := w.Write(buf)
		return err == nil && rc.Flush() == nil
	}
	if _, err := io.WriteString(w, hello); err != nil || rc.Flush() != nil {
		return
	}
	keepAlive := time.NewTicker(srv.keepAlive)
	defer keepAlive.Stop()
	due := time.NewTimer(time.Hour)
	due.Stop()
	defer due.Stop()
	for {
		var buf []byte
		select {
		case <-r.Context().Done():
			return
		case ev, open := <-ch:
			if !open {
				send(s.due(time.Now(), true))
				return
			}
			buf = s.engineEvent(ev, time.Now())
		case <-due.C:
			buf = s.due(time.Now(), false)
		case <-keepAlive.C:
			buf = []byte(": keep-alive\n\n")
		case ev, open := <-pulls:
			if !open {
				pulls = nil
				continue
			}
			buf = s.pullEvent(ev)
		}
		if !send(buf) {
			return
		}
		if at, pending := s.next(); pending {
			due.Reset(max(time.Until(at), 0))
		}
	}
}

// events serves GET /models/events: engine events as SSE (wire.Event, with the sequence as id),
// coalesced per model, and Hub downloads (wire.DownloadEvent).
func (srv *Server) events(w http.ResponseWriter, r *http.Request) {
	srv.serveSSE(w, r, modelEvents{newCoalescer(srv.coalesce)}, ": connected\n\n")
}

// modelEvents renders /models/events.
type modelEvents struct{ c *coalescer }

func (s modelEvents) engineEvent(ev engine.Event, now time.Time) []byte {
	return appendEvents(nil, s.c.add(ev, now))
}
func (s modelEvents) pullEvent(ev hub.Event) []byte { return pullEventLine(ev) }
func (s modelEvents) due(now time.Time, all bool) []byte {
	return appendEvents(nil, s.c.flush(now, all))
}
func (s modelEvents) next() (time.Time, bool) { return s.c.next() }

// appendEvents appends engine events as /models/events data blocks.
func appendEvents(buf []byte, evs []engine.Event) []byte {
	for _, ev := range evs {
		b, _ := json.Marshal(wire.Event{Seq: ev.Seq, Time: ev.Time.UTC(), Model: ev.Model, Kind: string(ev.Kind),
			State: string(ev.State), Active: ev.Active, Message: ev.Message})
		buf = append(buf, "id: "+strconv.FormatUint(ev.Seq, 10)+"\ndata: "...)
		buf = append(append(buf, b...), "\n\n"...)
	}
	return buf
}
