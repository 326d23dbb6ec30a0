package wire

import "time"

// Peer is one other machine's server ([peers.NAME]) as GET /api/peers and /api/status give it.
// Its key is never shown.
type Peer struct {
	Name     string      `json:"name"`
	URL      string      `json:"url"`
	State    string      `json:"state"`   // checking, up, down
	Kind     string      `json:"kind"`    // what answered its model list: "openai" (/v1/models) or "ollama" (/api/tags)
	HasKey   bool        `json:"has_key"` // an api_key is configured for it
	Models   []PeerModel `json:"models"`  // as last read; kept, and unavailable, while it is down
	Error    string      `json:"error"`   // why the last read failed; "" when it did not
	LastSeen *time.Time  `json:"last_seen"`
	NextTry  *time.Time  `json:"next_try"`
}

// PeerModel is one model of a peer.
type PeerModel struct {
	ID     string `json:"id"`     // the peer's own ID
	Ref    string `json:"ref"`    // "peer:NAME/ID": always this peer's, whatever the local models are
	Status string `json:"status"` // the peer's state of it, "unavailable" while the peer is down
	Local  bool   `json:"local"`  // a local model has the same ID (it wins; Ref reaches this one)
}

// PeerList is the GET /api/peers document.
type PeerList struct {
	Peers []Peer `json:"peers"`
}

// PeerAdd is the POST /api/peers request: a peer added, or changed when the name exists.
type PeerAdd struct {
	Name   string `json:"name"`
	URL    string `json:"url"`
	APIKey string `json:"api_key,omitempty"`
}
