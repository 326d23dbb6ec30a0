// Package discover finds other Llamatray instances on the local network with mDNS (DNS-SD service
// _llamatray._tcp) and announces this one. It only offers: what it finds is shown, and a user adds
// it as a peer; nothing here adds one. An instance is announced only while its router listens on a
// non-loopback address (one on 127.0.0.1 cannot be reached from elsewhere, so it says nothing).
package discover

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/mdns"
	"github.com/llamatray/llamatray/router/internal/safetext"
	"github.com/llamatray/llamatray/router/wire"
)

// Bounds on what announcements may show: another machine wrote them.
const (
	maxNameRunes    = 64
	maxVersionRunes = 40
	maxIDLen        = 64
	// maxFound bounds the instances kept from the network: a machine that announces thousands
	// of services fills no more.
	maxFound = 64
	// minPort: an instance announced on a privileged port (ssh, a router's admin page) is not
	// one; Llamatray listens on 1024 and up.
	minPort = 1024
)

// ServiceType is the DNS-SD service Llamatray instances announce.
const ServiceType = "_llamatray._tcp"

// TXT keys of an announcement.
const (
	txtVersion = "version" // Llamatray's version
	txtName    = "name"    // the instance's name (its machine's)
	txtID      = "id"      // random per process: how an instance tells its own announcement
)

// Self is what this instance announces.
type Self struct {
	ID      string // random per process
	Name    string // shown to others; the host name by default
	Version string
}

// TXT is the TXT record of s.
func (s Self) TXT() []string {
	return []string{txtVersion + "=" + s.Version, txtName + "=" + s.Name, txtID + "=" + s.ID}
}

// Found is one instance read from an announcement.
type Found struct {
	ID string // its TXT id
	wire.Discovered
}

// parseTXT reads key=value fields; a field with no '=' or an empty key is ignored, a repeated key
// keeps its first value (RFC 6763 §6.4).
func parseTXT(fields []string) map[string]string {
	out := map[string]string{}
	for _, f := range fields {
		k, v, ok := strings.Cut(f, "=")
		k = strings.ToLower(k)
		if !ok || k == "" {
			continue
		}
		if _, seen := out[k]; !seen {
			out[k] = v
		}
	}
	return out
}

// FromEntry is the instance an mDNS answer describes, or why it is not one: it needs a port of
// 1024 and up, an address of another machine (not loopback, unspecified or multicast: an
// announcement pointing at this machine's own services is refused) and the TXT id Llamatray
// announces, printable and short.
func FromEntry(e *mdns.ServiceEntry) (Found, error) {
	if e == nil {
		return Found{}, fmt.Errorf("no entry")
	}
	if e.Port < minPort || e.Port > 65535 {
		return Found{}, fmt.Errorf("%q: port %d is not a Llamatray's (%d-65535)", e.Name, e.Port, minPort)
	}
	ips := []net.IP{e.AddrV4, e.AddrV6}
	if e.AddrV6IPAddr != nil {
		ips = append(ips, e.AddrV6IPAddr.IP)
	}
	for _, ip := range ips {
		if ip != nil && (ip.IsLoopback() || ip.IsMulticast()) {
			return Found{}, fmt.Errorf("%q: address %s is not another machine's", e.Name, ip)
		}
	}
	var host string
	switch {
	case e.AddrV4 != nil && !e.AddrV4.IsUnspecified():
		host = e.AddrV4.String()
	case e.AddrV6IPAddr != nil && !e.AddrV6IPAddr.IP.IsUnspecified():
		host = e.AddrV6IPAddr.String() // with its zone when link-local
	default:
		return Found{}, fmt.Errorf("%q: no address", e.Name)
	}
	txt := parseTXT(e.InfoFields)
	if txt[txtID] == "" {
		return Found{}, fmt.Errorf("%q: no %s in its TXT record (not a Llamatray)", e.Name, txtID)
	}
	if err := safetext.Check(txt[txtID]); err != nil || len(txt[txtID]) > maxIDLen {
		return Found{}, fmt.Errorf("%q: bad %s in its TXT record (%d bytes): %v", e.Name, txtID, len(txt[txtID]), err)
	}
	name := safetext.Clean(txt[txtName], maxNameRunes) // shown on terminals and in the window
	if name == "" {
		name = safetext.Clean(instanceLabel(e.Name), maxNameRunes)
	}
	u := url.URL{Scheme: "http", Host: net.JoinHostPort(host, strconv.Itoa(e.Port))}
	return Found{ID: txt[txtID], Discovered: wire.Discovered{
		Instance: name, URL: u.String(), Version: safetext.Clean(txt[txtVersion], maxVersionRunes),
	}}, nil
}

// instanceLabel is the instance part of NAME._llamatray._tcp.local.
func instanceLabel(full string) string {
	if i := strings.Index(full, "."+ServiceType); i > 0 {
		return strings.ReplaceAll(full[:i], `\ `, " ")
	}
	return strings.TrimSuffix(full, ".")
}

// Filter is found without this instance (selfID), without those whose URL is a configured peer's
// (peerURLs), one entry per URL, sorted by instance name then URL.
func Filter(found []Found, selfID string, peerURLs []string) []Found {
	configured := map[string]bool{}
	for _, u := range peerURLs {
		configured[normURL(u)] = true
	}
	seen := map[string]bool{}
	var out []Found
	for _, f := range found {
		k := normURL(f.URL)
		if f.ID == selfID || configured[k] || seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b Found) int {
		return cmp.Or(strings.Compare(a.Instance, b.Instance), strings.Compare(a.URL, b.URL))
	})
	return out
}

// normURL is u's scheme, host (an address in its canonical form) and port, lower case, for
// comparing a found URL with configured ones: "http://10.0.0.2:8080/" and "HTTP://10.0.0.2:8080"
// are one.
func normURL(u string) string {
	p, err := url.Parse(strings.TrimSpace(u))
	if err != nil || p.Host == "" {
		return strings.ToLower(strings.TrimRight(u, "/"))
	}
	host, port := strings.ToLower(p.Hostname()), p.Port()
	if a, err := netip.ParseAddr(host); err == nil {
		host = a.Unmap().String()
	}
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[strings.ToLower(p.Scheme)]
	}
	return strings.ToLower(p.Scheme) + "://" + net.JoinHostPort(host, port) + strings.TrimRight(p.EscapedPath(), "/")
}

// Advertised is whether a router listening on listen (host:port) is announced, and its port: only
// a non-loopback host is ("" and 0.0.0.0 are every address, so they are).
func Advertised(listen string) (port int, ok bool) {
	host, p, err := net.SplitHostPort(listen)
	if err != nil {
		return 0, false
	}
	n, err := strconv.Atoi(p)
	if err != nil || n <= 0 || n > 65535 {
		return 0, false
	}
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return 0, false
	}
	if i := strings.IndexByte(h, '%'); i >= 0 {
		h = h[:i]
	}
	if a, err := netip.ParseAddr(h); err == nil && a.Unmap().IsLoopback() {
		return 0, false
	}
	return n, true
}

// quiet is the library's logger: its messages (bind failures, malformed packets from others) are
// not ours to print; errors that matter come back as errors.
var quiet = log.New(io.Discard, "", 0)

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
