package child

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"time"
)

// probeKind says which endpoint a probe asks.
type probeKind int

const (
	probeNone   probeKind = iota
	probeHealth           // GET /health while loading: 200 means ready
	probeProps            // GET /props while ready, for children without state lines: is_sleeping
)

// probeResult is the answer of one probe; a probe that failed leaves it false.
type probeResult struct {
	kind     probeKind
	healthy  bool // probeHealth: 200
	sleeping bool // probeProps: is_sleeping
	known    bool // probeProps: the field was present
}

// probeTimeout bounds one probe request.
const probeTimeout = 2 * time.Second

// addrKey carries the Addr a probe dials in its request's context.
type addrKey struct{}

// newProbeClient makes the readiness and sleep probes of one child. It keeps one idle connection
// so polling every 50 ms does not open a socket each time.
func newProbeClient() *http.Client {
	d := &net.Dialer{Timeout: probeTimeout}
	return &http.Client{Transport: &http.Transport{
		Proxy: nil, // children are on this machine; never use a proxy
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			a, _ := ctx.Value(addrKey{}).(Addr)
			return a.Dial(ctx, d)
		},
		MaxIdleConnsPerHost: 1,
		IdleConnTimeout:     10 * time.Second,
		DisableCompression:  true,
	}}
}

// probe asks the child at addr once and returns the result. It never blocks longer than
// probeTimeout.
func probe(ctx context.Context, client *http.Client, addr Addr, kind probeKind) probeResult {
	ctx, cancel := context.WithTimeout(context.WithValue(ctx, addrKey{}, addr), probeTimeout)
	defer cancel()
	path := "/health"
	if kind == probeProps {
		path = "/props"
	}
	res := probeResult{kind: kind}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, addr.URL().String()+path, nil)
	if err != nil {
		return res
	}
	resp, err := client.Do(req)
	if err != nil {
		return res
	}
	defer resp.Body.Close()
	body := io.LimitReader(resp.Body, 4<<20)
	switch {
	case kind == probeHealth:
		res.healthy = resp.StatusCode == http.StatusOK
	case resp.StatusCode == http.StatusOK:
		var props struct {
			IsSleeping *bool `json:"is_sleeping"`
		}
		if json.NewDecoder(body).Decode(&props) == nil && props.IsSleeping != nil {
			res.known, res.sleeping = true, *props.IsSleeping
		}
	}
	_, _ = io.Copy(io.Discard, body) // drain so the connection can be reused
	return res
}
