package view

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/engine"
	"github.com/llamatray/llamatray/router/wire"
)

// WaitText is the one sentence that says why a model's queued requests wait, "" when none waits:
// "waiting: 2nd in line for 5.1 GiB (2.0 GiB free); beta will be unloaded when its 1 request ends",
// "waiting: every model is busy since 12:03:04 (alpha 2 requests, beta 1)", "loading 40%". The
// models window, the tray, the Try it pane, /models and the progress comments of a stream all show it.
func WaitText(st engine.ModelStatus) string {
	w := st.Wait
	if w == nil {
		return ""
	}
	line := "waiting: " + ordinal(w.Position) + " in line"
	need := line + " for " + config.HumanSize(w.Need) + " (" + freeText(w) + ")"
	switch w.Kind {
	case engine.WaitLoading:
		if st.Progress > 0 {
			return fmt.Sprintf("loading %d%%", int(st.Progress*100))
		}
		return "loading"
	case engine.WaitStopping:
		return line + "; its last run is stopping, then it loads again"
	case engine.WaitDraining:
		return "waiting: unloading once its " + ends(st.Active) + ", then it loads again"
	case engine.WaitMemory:
		return need + "; " + unloading(w.Victims)
	case engine.WaitBehind:
		return need + ", behind " + w.Behind
	case engine.WaitWorker:
		s := "waiting for worker " + w.Worker
		if len(w.Holders) > 0 {
			s += ", used by " + w.Holders[0].ID
		}
		if len(w.Victims) > 0 {
			s += ", which is being unloaded"
		}
		return s
	case engine.WaitBusy:
		if len(w.Victims) > 0 {
			return need + "; " + unloading(w.Victims)
		}
		s := "waiting: "
		if w.Position > 1 {
			s += ordinal(w.Position) + " in line; "
		}
		s += "every model is busy since " + clock(w.BusySince) + " (" + holders(w.Holders) + ")"
		if w.MaxLoaded > 0 {
			s += fmt.Sprintf("; max_loaded %d reached", w.MaxLoaded)
		}
		if !w.DrainAt.IsZero() {
			s += "; busy models drain for it at " + clock(w.DrainAt)
		}
		return s
	}
	return line
}

// freeText is what is free where the load is short: each GPU device it needs more of than is free
// there, else RAM.
func freeText(w *engine.WaitReason) string {
	var short []string
	for _, d := range slices.Sorted(maps.Keys(w.NeedGPU)) {
		if n := w.NeedGPU[d]; n > w.FreeGPU[d] {
			short = append(short, fmt.Sprintf("%s free of its %s on %s", config.HumanSize(w.FreeGPU[d]), config.HumanSize(n), d))
		}
	}
	if len(short) > 0 {
		return strings.Join(short, ", ")
	}
	return config.HumanSize(w.Free) + " free"
}

// unloading says which models are unloaded for it and when: "beta will be unloaded when its 1
// request ends", "beta is being unloaded".
func unloading(vs []engine.WaitModel) string {
	if len(vs) == 0 {
		return "memory is being freed"
	}
	var parts []string
	for _, v := range vs {
		if v.Active > 0 {
			parts = append(parts, v.ID+" will be unloaded when its "+ends(v.Active))
		} else {
			parts = append(parts, v.ID+" is being unloaded")
		}
	}
	return strings.Join(parts, ", ")
}

// ends is "1 request ends" or "3 requests end".
func ends(n int) string {
	if n == 1 {
		return "1 request ends"
	}
	return fmt.Sprintf("%d requests end", n)
}

// requests is "1 request" or "3 requests".
func requests(n int) string {
	if n == 1 {
		return "1 request"
	}
	return fmt.Sprintf("%d requests", n)
}

// holders is "alpha 2 requests, beta 1, gamma loading".
func holders(hs []engine.WaitModel) string {
	var parts []string
	counted := false
	for _, h := range hs {
		var what string
		switch {
		case h.Active > 0 && !counted:
			what, counted = requests(h.Active), true
		case h.Active > 0:
			what = fmt.Sprint(h.Active)
		case h.Pinned:
			what = "pinned"
		default:
			what = string(h.State)
		}
		parts = append(parts, h.ID+" "+what)
	}
	if len(parts) == 0 {
		return "none can be unloaded"
	}
	return strings.Join(parts, ", ")
}

func ordinal(n int) string {
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return fmt.Sprintf("%d%s", n, suffix)
}

// clock is a time of today as people read it, in local time.
func clock(t time.Time) string { return t.Local().Format("15:04:05") }

// wireWait encodes the reason as the "wait" object of a model's status.
func wireWait(st engine.ModelStatus) *wire.Wait {
	w := st.Wait
	if w == nil {
		return nil
	}
	return &wire.Wait{
		Text:        WaitText(st),
		Kind:        string(w.Kind),
		Position:    w.Position,
		Since:       w.Since.UTC(),
		NeedBytes:   w.Need,
		NeedDevices: orEmptyMap(w.NeedGPU),
		FreeBytes:   w.Free,
		FreeDevices: orEmptyMap(w.FreeGPU),
		Victims:     wireModels(w.Victims),
		Holders:     wireModels(w.Holders),
		BusySince:   timePtr(w.BusySince),
		DrainAt:     timePtr(w.DrainAt),
		MaxLoaded:   w.MaxLoaded,
		Behind:      w.Behind,
		Worker:      w.Worker,
	}
}

func wireModels(ms []engine.WaitModel) []wire.WaitModel {
	out := make([]wire.WaitModel, 0, len(ms))
	for _, m := range ms {
		out = append(out, wire.WaitModel{ID: m.ID, State: string(m.State), ActiveRequests: m.Active, Pinned: m.Pinned})
	}
	return out
}

func orEmptyMap(m map[string]int64) map[string]int64 {
	if m == nil {
		return map[string]int64{}
	}
	return m
}
