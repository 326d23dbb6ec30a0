package wire

import "time"

// Discovered is another Llamatray found on the local network (mDNS, router/discover), as GET
// /api/peers/discovered gives it. It is only offered: nothing is added until the user adds it as a
// peer (POST /api/peers with its URL and the key it requires).
type Discovered struct {
	Name     string    `json:"name"`     // a peer name made from its instance name, for POST /api/peers
	Instance string    `json:"instance"` // the name it announces (its machine's name)
	URL      string    `json:"url"`      // http://ADDRESS:PORT of its listener
	Version  string    `json:"version"`  // the Llamatray version it announces
	LastSeen time.Time `json:"last_seen"`
}

// DiscoveredList is the GET /api/peers/discovered document. Enabled is false when discovery is off
// (discover = false in the configuration); Error is why the last look failed, "" when it did not.
type DiscoveredList struct {
	Enabled    bool         `json:"enabled"`
	Discovered []Discovered `json:"discovered"`
	Error      string       `json:"error"`
}
