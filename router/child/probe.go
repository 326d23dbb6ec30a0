package child

import (
	"context"
	"encoding/json"
	"fmt"
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

// probeResult is the answer of one probe.
type probeResult struct {
	kind     probeKind
	healthy  bool // probeHealth: 200
	sleeping bool // probeProps: is_sleeping
	known    bool // probeProps: the field was present
	err      error
}

// probeTimeout bounds one probe request.
const probeTimeout = 2 * time.Second

// probeClient makes the readiness and sleep probes of one child. It keeps one
// idle connection so polling every 50 ms does not open a socket each time.
type probeClient struct {
	transport *http.Transport
	http      *http.Client
}

// addrKey carries the Addr a probe dials in its request's context.
type addrKey struct{}

func newProbeClient() *probeClient {
	d := &net.Dialer{Timeout: probeTimeout}
	t := &http.Transport{
		Proxy: nil, // children are on this machine; never use a proxy
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			a, _ := ctx.Value(addrKey{}).(Addr)
			return a.Dial(ctx, d)
		},
		MaxIdleConnsPerHost: 1,
		IdleConnTimeout:     10 * time.Second,
		DisableCompression:  true,
	}
	return &probeClient{transport: t, http: &http.Client{Transport: t}}
}

// close drops idle connections to a process that has ended.
func (pc *probeClient) close() { pc.transport.CloseIdleConnections() }

// probe asks the child at addr once and returns the result. It never blocks
// longer than probeTimeout.
func (pc *probeClient) probe(ctx context.Context, addr Addr, kind probeKind) probeResult {
	ctx, cancel := context.WithTimeout(context.WithValue(ctx, addrKey{}, addr), probeTimeout)
	defer cancel()
	path := "/health"
	if kind == probeProps {
		path = "/props"
	}
	u := addr.URL().String() + path
	res := probeResult{kind: kind}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		res.err = err
		return res
	}
	resp, err := pc.http.Do(req)
	if err != nil {
		res.err = err
		return res
	}
	defer resp.Body.Close()
	body := io.LimitReader(resp.Body, 4<<20)
	switch kind {
	case probeHealth:
		res.healthy = resp.StatusCode == http.StatusOK
	case probeProps:
		if resp.StatusCode != http.StatusOK {
			res.err = fmt.Errorf("GET %s: %s", path, resp.Status)
			break
		}
		var props struct {
			IsSleeping *bool `json:"is_sleeping"`
		}
		if err := json.NewDecoder(body).Decode(&props); err != nil {
			res.err = fmt.Errorf("GET %s: %w", path, err)
			break
		}
		if props.IsSleeping != nil {
			res.known, res.sleeping = true, *props.IsSleeping
		}
	}
	_, _ = io.Copy(io.Discard, body) // drain so the connection can be reused
	return res
}
