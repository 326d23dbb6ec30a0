package discover

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log"
	"net"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/hashicorp/mdns"
)

// quiet is the library's logger: its messages (bind failures, malformed packets from others) are
// not ours to print; errors that matter come back as errors.
var quiet = log.New(io.Discard, "", 0)

// NewID is a random instance ID for Self.ID.
func NewID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// HostName is this machine's name for Self.Name ("llamatray" when it has none).
func HostName() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "llamatray"
	}
	if i := strings.IndexByte(h, '.'); i > 0 {
		h = h[:i]
	}
	return h
}

// label is s made safe as one DNS label: letters, digits and '-', at most 50 characters.
func label(s string) string {
	var b strings.Builder
	for _, c := range strings.ToLower(s) {
		if b.Len() >= 50 {
			break
		}
		switch {
		case c >= 'a' && c <= 'z' || c >= '0' && c <= '9':
			b.WriteRune(c)
		case b.Len() > 0:
			b.WriteByte('-')
		}
	}
	out := strings.Trim(b.String(), "-")
	if out == "" {
		return "llamatray"
	}
	return out
}

// Advertiser is this instance's announcement; Close ends it.
type Advertiser struct {
	srv *mdns.Server
}

// Advertise announces self at the router's listen address, or returns nil and no error when listen
// is loopback (nothing to announce). An unspecified host (0.0.0.0, "::", "") announces this
// machine's non-loopback addresses; a named host, the addresses it resolves to.
func Advertise(listen string, self Self) (*Advertiser, error) {
	port, ok := Advertised(listen)
	if !ok {
		return nil, nil
	}
	ips, err := listenIPs(listen)
	if err != nil {
		return nil, err
	}
	if len(ips) == 0 {
		return nil, nil
	}
	// The instance and its host name are unique per process: two instances on one machine (or one
	// machine name on two) must not answer for each other's addresses.
	inst := label(self.Name) + "-" + self.ID[:min(8, len(self.ID))]
	zone, err := mdns.NewMDNSService(inst, ServiceType, "", inst+".local.", port, ips, self.TXT())
	if err != nil {
		return nil, fmt.Errorf("mdns announcement of %s: %w", listen, err)
	}
	srv, err := mdns.NewServer(&mdns.Config{Zone: zone, Logger: quiet})
	if err != nil {
		return nil, fmt.Errorf("mdns responder for %s: %w", listen, err)
	}
	return &Advertiser{srv: srv}, nil
}

// Close ends the announcement; a nil Advertiser is none.
func (a *Advertiser) Close() {
	if a != nil {
		_ = a.srv.Shutdown()
	}
}

// listenIPs are the non-loopback addresses a router listening on listen is reached at.
func listenIPs(listen string) ([]net.IP, error) {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return nil, fmt.Errorf("listen address %q: %w", listen, err)
	}
	var cands []net.IP
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil && !a.IsUnspecified() {
		cands = []net.IP{a.AsSlice()}
	} else if host == "" || err == nil {
		addrs, err := net.InterfaceAddrs()
		if err != nil {
			return nil, fmt.Errorf("this machine's addresses: %w", err)
		}
		v4only := host == "0.0.0.0"
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && (!v4only || n.IP.To4() != nil) {
				cands = append(cands, n.IP)
			}
		}
	} else {
		ips, err := net.LookupIP(host)
		if err != nil {
			return nil, fmt.Errorf("listen host %q: %w", host, err)
		}
		cands = ips
	}
	var out []net.IP
	for _, ip := range cands {
		// A link-local IPv6 address needs its interface to be reached, which an answer cannot carry.
		if !ip.IsLoopback() && !ip.IsUnspecified() && !ip.IsMulticast() && !(ip.To4() == nil && ip.IsLinkLocalUnicast()) {
			out = append(out, ip)
		}
	}
	return out, nil
}

// Lookup asks the network for Llamatray instances for wait and returns those that answered.
func Lookup(ctx context.Context, wait time.Duration) ([]Found, error) {
	entries := make(chan *mdns.ServiceEntry, 64)
	done := make(chan error, 1)
	go func() {
		defer close(entries)
		done <- mdns.QueryContext(ctx, &mdns.QueryParam{Service: ServiceType, Domain: "local", Timeout: wait,
			Entries: entries, Logger: quiet})
	}()
	var out []Found
	for e := range entries {
		if f, err := FromEntry(e); err == nil && len(out) < maxFound {
			out = append(out, f)
		}
	}
	if err := <-done; err != nil && ctx.Err() == nil {
		return out, fmt.Errorf("mdns lookup: %w", err)
	}
	return out, ctx.Err()
}
