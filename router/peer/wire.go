package peer

import (
	"time"

	"github.com/llamatray/llamatray/router/wire"
)

// Unavailable is the status of a model whose peer does not answer.
const Unavailable = "unavailable"

// ModelStatus is the state a listing shows of peer i's model m: "unavailable" while i is down,
// else the peer's own state of it, else "available".
func (i Info) ModelStatus(m Model) string {
	switch {
	case !i.Up():
		return Unavailable
	case m.Status != "":
		return m.Status
	}
	return "available"
}

// Wire is i as GET /api/peers gives it; local says a model of this instance has the ID. The key
// is never in it.
func (i Info) Wire(local func(id string) bool) wire.Peer {
	wp := wire.Peer{Name: i.Name, URL: i.URL, State: i.State, Kind: i.Kind, HasKey: i.APIKey != "", Error: i.Error,
		Models: make([]wire.PeerModel, 0, len(i.Models)), LastSeen: timeOrNil(i.LastSeen), NextTry: timeOrNil(i.NextTry)}
	for _, m := range i.Models {
		wp.Models = append(wp.Models, wire.PeerModel{ID: m.ID, Ref: Ref(i.Name, m.ID), Status: i.ModelStatus(m), Local: local != nil && local(m.ID)})
	}
	return wp
}

func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}
