package discover

import (
	"net"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/mdns"

	"github.com/llamatray/llamatray/router/internal/safetext"
)

func TestParseTXT(t *testing.T) {
	got := parseTXT([]string{"version=1.2.3", "name=box=1", "ID=abc", "noequals", "=empty", "id=second", "name="})
	want := map[string]string{"version": "1.2.3", "name": "box=1", "id": "abc"}
	if len(got) != len(want) {
		t.Fatalf("parseTXT = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("parseTXT[%q] = %q, want %q", k, got[k], v)
		}
	}
}

func TestSelfTXTRoundTrip(t *testing.T) {
	s := Self{ID: "0123456789abcdef", Name: "desk top", Version: "v0.9.0"}
	e := &mdns.ServiceEntry{Name: "desk-top-01234567._llamatray._tcp.local.", Port: 8080,
		AddrV4: net.ParseIP("192.168.1.20"), InfoFields: s.TXT()}
	f, err := FromEntry(e)
	if err != nil {
		t.Fatal(err)
	}
	if f.ID != s.ID || f.Instance != "desk top" || f.Version != "v0.9.0" || f.URL != "http://192.168.1.20:8080" {
		t.Errorf("FromEntry = %+v", f)
	}
}

func TestFromEntry(t *testing.T) {
	v6 := &net.IPAddr{IP: net.ParseIP("fe80::1"), Zone: "eth0"}
	for _, tc := range []struct {
		name    string
		e       *mdns.ServiceEntry
		url     string
		inst    string
		errPart string
	}{
		{name: "nil", e: nil, errPart: "no entry"},
		{name: "no port", e: &mdns.ServiceEntry{Name: "a", AddrV4: net.ParseIP("10.0.0.1"), InfoFields: []string{"id=x"}}, errPart: "is not a Llamatray's"},
		{name: "port too large", e: &mdns.ServiceEntry{Name: "a", Port: 70000, AddrV4: net.ParseIP("10.0.0.1"), InfoFields: []string{"id=x"}}, errPart: "is not a Llamatray's"},
		{name: "no address", e: &mdns.ServiceEntry{Name: "a", Port: 1025, InfoFields: []string{"id=x"}}, errPart: "no address"},
		{name: "unspecified address", e: &mdns.ServiceEntry{Name: "a", Port: 1025, AddrV4: net.IPv4zero, InfoFields: []string{"id=x"}}, errPart: "no address"},
		{name: "not llamatray", e: &mdns.ServiceEntry{Name: "a", Port: 1025, AddrV4: net.ParseIP("10.0.0.1"), InfoFields: []string{"version=1"}}, errPart: "not a Llamatray"},
		{name: "v4", e: &mdns.ServiceEntry{Name: "x._llamatray._tcp.local.", Port: 8080, AddrV4: net.ParseIP("10.0.0.1"), InfoFields: []string{"id=x", "name=box"}},
			url: "http://10.0.0.1:8080", inst: "box"},
		{name: "v4 preferred", e: &mdns.ServiceEntry{Name: "x._llamatray._tcp.local.", Port: 8080, AddrV4: net.ParseIP("10.0.0.1"), AddrV6IPAddr: v6, InfoFields: []string{"id=x"}},
			url: "http://10.0.0.1:8080", inst: "x"},
		{name: "v6 link-local keeps its zone", e: &mdns.ServiceEntry{Name: `my\ box._llamatray._tcp.local.`, Port: 9090, AddrV6IPAddr: v6, InfoFields: []string{"id=x"}},
			url: "http://[fe80::1%25eth0]:9090", inst: "my box"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := FromEntry(tc.e)
			if tc.errPart != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errPart) {
					t.Fatalf("FromEntry err = %v, want one with %q", err, tc.errPart)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if f.URL != tc.url || f.Instance != tc.inst {
				t.Errorf("FromEntry = url %q instance %q, want %q %q", f.URL, f.Instance, tc.url, tc.inst)
			}
		})
	}
}

func found(id, inst, u string) Found {
	f := Found{ID: id}
	f.Instance, f.URL = inst, u
	return f
}

func TestFilter(t *testing.T) {
	in := []Found{
		found("self", "me", "http://10.0.0.1:8080"),
		found("b", "beta", "http://10.0.0.3:8080"),
		found("a", "alpha", "http://10.0.0.2:8080"),
		found("a", "alpha", "http://10.0.0.2:8080"), // answered twice
		found("c", "gamma", "http://10.0.0.4:8080"), // configured, written otherwise
		found("d", "delta", "http://[::ffff:10.0.0.5]:80"),
		found("e", "alpha", "http://10.0.0.9:8080"),
	}
	peers := []string{"HTTP://10.0.0.4:8080/", "http://10.0.0.5", "not a url"}
	got := Filter(in, "self", peers)
	var urls []string
	for _, f := range got {
		urls = append(urls, f.Instance+" "+f.URL)
	}
	want := []string{"alpha http://10.0.0.2:8080", "alpha http://10.0.0.9:8080", "beta http://10.0.0.3:8080"}
	if !slices.Equal(urls, want) {
		t.Errorf("Filter = %q, want %q", urls, want)
	}
	if got := Filter(nil, "", nil); len(got) != 0 {
		t.Errorf("Filter(nil) = %v", got)
	}
}

func TestNamed(t *testing.T) {
	got := Named([]Found{found("a", "Desk Top", "http://a:1"), found("b", "desk.top", "http://b:1"), found("c", "", "http://c:1"), found("d", "ünï", "http://d:1")})
	var names []string
	for _, d := range got {
		names = append(names, d.Name)
	}
	want := []string{"desk-top", "desk-top-2", "llamatray", "n"}
	if !slices.Equal(names, want) {
		t.Errorf("Named names = %q, want %q", names, want)
	}
	if got := Named(nil); got == nil || len(got) != 0 {
		t.Errorf("Named(nil) = %#v, want an empty list", got)
	}
}

func TestAdvertised(t *testing.T) {
	for _, tc := range []struct {
		listen string
		port   int
		ok     bool
	}{
		{"127.0.0.1:8080", 0, false},
		{"127.1.2.3:8080", 0, false},
		{"localhost:8080", 0, false},
		{"app.localhost:8080", 0, false},
		{"[::1]:8080", 0, false},
		{"[::ffff:127.0.0.1]:8080", 0, false},
		{"0.0.0.0:8080", 8080, true},
		{":8080", 8080, true},
		{"[::]:9000", 9000, true},
		{"192.168.1.20:8080", 8080, true},
		{"[fe80::1%eth0]:8080", 8080, true},
		{"box.lan:8080", 8080, true},
		{"192.168.1.20:0", 0, false},
		{"192.168.1.20", 0, false},
		{"", 0, false},
	} {
		port, ok := Advertised(tc.listen)
		if port != tc.port || ok != tc.ok {
			t.Errorf("Advertised(%q) = %d, %v; want %d, %v", tc.listen, port, ok, tc.port, tc.ok)
		}
	}
}

func TestAdvertiseLoopbackAnnouncesNothing(t *testing.T) {
	for _, l := range []string{"127.0.0.1:8080", "localhost:1", "[::1]:2"} {
		a, err := Advertise(l, Self{ID: "x", Name: "n", Version: "v"})
		if a != nil || err != nil {
			a.Close()
			t.Errorf("Advertise(%q) = %v, %v; want nothing", l, a, err)
		}
	}
}

func TestListenIPs(t *testing.T) {
	ips, err := listenIPs("10.1.2.3:80")
	if err != nil || len(ips) != 1 || !ips[0].Equal(net.ParseIP("10.1.2.3")) {
		t.Errorf("listenIPs(10.1.2.3:80) = %v, %v", ips, err)
	}
	ips, err = listenIPs("0.0.0.0:80")
	if err != nil {
		t.Fatal(err)
	}
	for _, ip := range ips {
		if ip.IsLoopback() || ip.To4() == nil {
			t.Errorf("listenIPs(0.0.0.0:80) holds %v", ip)
		}
	}
	if _, err := listenIPs("nonsense"); err == nil {
		t.Error("listenIPs(nonsense): no error")
	}
}

func TestNormURL(t *testing.T) {
	for a, b := range map[string]string{
		"http://10.0.0.2:8080/":   "http://10.0.0.2:8080",
		"HTTP://Box:80":           "http://box",
		"https://box":             "https://box:443/",
		"http://[::ffff:1.2.3.4]": "http://1.2.3.4:80",
		"http://box:8080/x/":      "http://box:8080/x",
	} {
		if normURL(a) != normURL(b) {
			t.Errorf("normURL(%q) = %q, normURL(%q) = %q: want equal", a, normURL(a), b, normURL(b))
		}
	}
	if normURL("http://box:8080") == normURL("http://box:8081") {
		t.Error("different ports compare equal")
	}
}

// TestFromEntryCleansText: an announcement's name and version (another machine's text, printed by
// `llamatray peer discover` and shown in the window) lose escape sequences and are bounded.
func TestFromEntryCleansText(t *testing.T) {
	e := &mdns.ServiceEntry{Name: "x._llamatray._tcp.local.", Port: 8080, AddrV4: net.ParseIP("10.0.0.1"),
		InfoFields: []string{"id=x", "name=\x1b[2J\x1b]0;owned\x07box\x1b[0m" + strings.Repeat("z", 300), "version=v1\x1b[31m\n"}}
	f, err := FromEntry(e)
	if err != nil {
		t.Fatal(err)
	}
	if f.Instance != "box"+strings.Repeat("z", maxNameRunes-3) || f.Version != "v1" {
		t.Fatalf("instance %q version %q", f.Instance, f.Version)
	}
	e.InfoFields = []string{"id=x", "name=\x1b[0m"} // nothing left: the mDNS instance label
	e.Name = "lab\x1b[31mel._llamatray._tcp.local."
	if f, err := FromEntry(e); err != nil || f.Instance != "label" {
		t.Fatalf("%q %v", f.Instance, err)
	}
}

// TestFromEntryRefusesSpoofs: announcements that point at this machine (loopback), at a
// privileged port (ssh, an admin page), or whose id is no short printable text are no instances.
func TestFromEntryRefusesSpoofs(t *testing.T) {
	entry := func() *mdns.ServiceEntry {
		return &mdns.ServiceEntry{Name: "x._llamatray._tcp.local.", Port: 8080, AddrV4: net.ParseIP("10.0.0.1"), InfoFields: []string{"id=abc", "name=box"}}
	}
	if _, err := FromEntry(entry()); err != nil {
		t.Fatalf("a good entry: %v", err)
	}
	for name, spoil := range map[string]func(*mdns.ServiceEntry){
		"loopback v4":  func(e *mdns.ServiceEntry) { e.AddrV4 = net.ParseIP("127.0.0.1") },
		"loopback v6":  func(e *mdns.ServiceEntry) { e.AddrV4 = nil; e.AddrV6IPAddr = &net.IPAddr{IP: net.ParseIP("::1")} },
		"multicast":    func(e *mdns.ServiceEntry) { e.AddrV4 = net.ParseIP("224.0.0.251") },
		"ssh port":     func(e *mdns.ServiceEntry) { e.Port = 22 },
		"port 0":       func(e *mdns.ServiceEntry) { e.Port = 0 },
		"escape in id": func(e *mdns.ServiceEntry) { e.InfoFields = []string{"id=a\x1b[2Jb"} },
		"bidi in id":   func(e *mdns.ServiceEntry) { e.InfoFields = []string{"id=a\u202eb"} },
		"huge id":      func(e *mdns.ServiceEntry) { e.InfoFields = []string{"id=" + strings.Repeat("x", 5000)} },
	} {
		e := entry()
		spoil(e)
		if f, err := FromEntry(e); err == nil {
			t.Errorf("%s: taken as %+v", name, f)
		}
	}
}

// FuzzFromEntry takes arbitrary announcements: an entry taken as an instance has a Llamatray's
// port, another machine's address, a short printable id, and a name and version with no control
// or format character.
func FuzzFromEntry(f *testing.F) {
	f.Add("x._llamatray._tcp.local.", 8080, []byte{10, 0, 0, 1}, "id=abc\x00name=box\x00version=v1")
	f.Add("lab\x1b[31mel._llamatray._tcp.local.", 22, []byte{127, 0, 0, 1}, "id=a\u202eb\x00name=\x1b]0;x\x07")
	f.Add("", 65536, []byte{}, "")
	f.Fuzz(func(t *testing.T, name string, port int, ip []byte, txt string) {
		e := &mdns.ServiceEntry{Name: name, Port: port, InfoFields: strings.Split(txt, "\x00")}
		switch len(ip) {
		case 4:
			e.AddrV4 = net.IP(ip)
		case 16:
			e.AddrV6IPAddr = &net.IPAddr{IP: net.IP(ip)}
		}
		fd, err := FromEntry(e)
		if err != nil {
			return
		}
		if port < minPort || port > 65535 || len(fd.ID) > maxIDLen || safetext.Check(fd.ID) != nil ||
			safetext.Check(fd.Instance) != nil || safetext.Check(fd.Version) != nil {
			t.Fatalf("taken: %+v from %+v", fd, e)
		}
		u, err := url.Parse(fd.URL)
		if err != nil {
			t.Fatalf("URL %q: %v", fd.URL, err)
		}
		if h := net.ParseIP(u.Hostname()); h == nil || h.IsLoopback() || h.IsMulticast() || h.IsUnspecified() {
			t.Fatalf("taken with host %q: %+v", u.Hostname(), fd)
		}
	})
}
