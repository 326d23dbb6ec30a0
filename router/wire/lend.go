package wire

// Lending is this machine lent to other Llamatrays (config lend, the tray's "Lend this machine"):
// llama.cpp's RPC server on 127.0.0.1 behind Llamatray's link. The pairing token is not part of it:
// only the app shows it, never the API.
type Lending struct {
	On     bool   `json:"on"`              // lend is set
	State  string `json:"state"`           // LendOff, LendStarting, LendOn or LendFailed
	Listen string `json:"listen"`          // lend_listen
	Addr   string `json:"addr,omitempty"`  // where the link listens, once it does
	Error  string `json:"error,omitempty"` // why lending failed (no rpc-server, the port in use)
	Name   string `json:"name"`            // the worker's name heads see
	// Isolation, once on, is how its RPC server is kept from other local processes: "netns" (a
	// network namespace of its own, Linux) or "held" (on 127.0.0.1, its one connection held).
	Isolation string `json:"isolation,omitempty"`
}

// Lending states.
const (
	LendOff      = "off"
	LendStarting = "starting"
	LendOn       = "on"
	LendFailed   = "failed"
)
