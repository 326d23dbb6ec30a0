package config

import (
	"cmp"
	"fmt"
	"maps"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Worker is one [workers.NAME] section: a machine running Llamatray's worker, which serves its
// devices to llama.cpp's RPC backend. A model whose workers list names it ([models."ID"] workers)
// is spread over those machines: its child gets --rpc with the local end of each worker's link.
type Worker struct {
	Address string `toml:"address"` // host:port of the worker
	Token   string `toml:"token"`   // the worker's token; the link is refused without it
}

// validateWorkers checks every [workers.NAME] section and every model's workers list.
func (c Config) validateWorkers(p *problems) {
	bad, names := p.add, slices.Sorted(maps.Keys(c.Workers))
	addrOwner := map[string]string{}
	for _, name := range names {
		w := c.Workers[name]
		if err := checkWorkerName(name); err != nil {
			bad(err.Error(), "workers", name)
			continue
		}
		if err := checkWorkerAddress(w.Address); err != nil {
			bad(err.Error(), "workers", name, "address")
		} else if o := addrOwner[workerAddrKey(w.Address)]; o != "" {
			bad(fmt.Sprintf("%s is also the address of worker %q (%s)", w.Address, o, c.Workers[o].Address), "workers", name, "address")
		} else {
			addrOwner[workerAddrKey(w.Address)] = name
		}
		if strings.TrimSpace(w.Token) == "" {
			bad("a worker needs its token (the one its worker process prints or was given)", "workers", name, "token")
		} else if err := CheckWorkerToken(w.Token); err != nil {
			bad(err.Error(), "workers", name, "token")
		}
	}
	list := func(ws []string, key []string) {
		seen := map[string]bool{}
		for _, n := range ws {
			switch {
			case seen[n]:
				bad(fmt.Sprintf("worker %q is listed twice", n), key...)
			case !slices.Contains(names, n):
				bad(fmt.Sprintf("no worker %q: add a [workers.%s] section with its address and token%s", n, quoteKey(n), known(names)), key...)
			}
			seen[n] = true
		}
	}
	for _, id := range slices.Sorted(maps.Keys(c.Models)) {
		m := c.Models[id]
		list(m.Workers, []string{"models", id, "workers"})
		for _, v := range slices.Sorted(maps.Keys(m.Variants)) {
			list(m.Variants[v].Workers, []string{"models", id, "variants", v, "workers"})
		}
	}
}

func known(names []string) string {
	if len(names) == 0 {
		return " (none is configured)"
	}
	return " (configured: " + strings.Join(names, ", ") + ")"
}

func quoteKey(n string) string {
	if checkWorkerName(n) == nil {
		return n
	}
	return strconv.Quote(n)
}

// MinWorkerTokenLen is the shortest pairing token a worker or a [workers.NAME] section accepts:
// a head's proof of the token can be taken by whoever answers at the worker's address and tried
// against guesses offline, so a token is as long as a random one of 160 bits in base32.
const MinWorkerTokenLen = 32

// CheckWorkerToken says what is wrong with a worker's pairing token, or nil.
func CheckWorkerToken(t string) error {
	if len(t) < MinWorkerTokenLen {
		return fmt.Errorf("a worker token has at least %d characters (this one %d): use the one \"llamatray worker\" makes when it is given no token", MinWorkerTokenLen, len(t))
	}
	if strings.TrimSpace(t) != t || strings.ContainsAny(t, "\n\r\"") {
		return fmt.Errorf("a worker token has no spaces around it, no quotes and no line breaks")
	}
	return nil
}

// checkWorkerName refuses a name that would not read well in messages and the status.
func checkWorkerName(name string) error {
	if strings.TrimSpace(name) == "" {
		return fmt.Errorf("a worker name must not be empty")
	}
	if i := strings.IndexFunc(name, notNameRune); i >= 0 {
		return fmt.Errorf("worker name %q may hold only letters, digits, '.', '-' and '_', not %q", name, []rune(name[i:])[0])
	}
	return nil
}

// notNameRune says r is not one of the letters, digits, '.', '-' and '_' that names (of workers,
// variants and peers) are made of.
func notNameRune(r rune) bool {
	return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_')
}

// validPort says port is a number from 1 to 65535.
func validPort(port string) bool {
	p, err := strconv.Atoi(port)
	return err == nil && p >= 1 && p <= 65535
}

// checkWorkerAddress wants host:port with a host and a port from 1 to 65535.
func checkWorkerAddress(s string) error {
	if s == "" {
		return fmt.Errorf("a worker needs its address, host:port, like \"192.168.1.20:50052\"")
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return fmt.Errorf("%q is not host:port, like \"192.168.1.20:50052\"", s)
	}
	if host == "" || strings.ContainsAny(host, " \t/") {
		return fmt.Errorf("%q has no host name or IP address", s)
	}
	if !validPort(port) {
		return fmt.Errorf("port %q must be a number from 1 to 65535", port)
	}
	return nil
}

// workerAddrKey is a valid worker address as compared with the others: the host in lower case
// (without a trailing dot), an IP address in its canonical form, localhost, 127.0.0.1 and ::1 as
// one; no name is looked up.
func workerAddrKey(s string) string {
	host, port, _ := net.SplitHostPort(s)
	p, _ := strconv.Atoi(port)
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if ip := net.ParseIP(host); ip != nil {
		host = ip.String()
	}
	if host == "localhost" || host == "::1" || host == "127.0.0.1" {
		host = "localhost"
	}
	return net.JoinHostPort(host, strconv.Itoa(p))
}

const workersComment = `
# Workers: other machines whose devices a model may use (llama.cpp's RPC backend), each running
# "llamatray worker". A model spreads over them with [models."ID"] workers = ["NAME", ...]; each
# worker runs one model at a time (a second one waits, or an idle one is unloaded for it).
`

// renderWorkers writes the [workers.NAME] sections, or a commented example when there are none.
func (r *renderer) renderWorkers(ws map[string]Worker) {
	r.b.WriteString(workersComment)
	if len(ws) == 0 {
		r.b.WriteString("# [workers.desk]\n# address = \"192.168.1.20:50052\"\n# token = \"the worker's token\"\n")
		return
	}
	for _, name := range slices.Sorted(maps.Keys(ws)) {
		fmt.Fprintf(&r.b, "[workers.%s]\n", r.str(name))
		fmt.Fprintf(&r.b, "address = %s\ntoken = %s\n", r.str(ws[name].Address), r.str(ws[name].Token))
	}
}

// DefaultLendListen is where a lent machine's link listens unless lend_listen says otherwise: every
// address, on llama.cpp's own RPC port (its RPC server itself listens on 127.0.0.1 only).
const DefaultLendListen = "0.0.0.0:50052"

// validateLend checks lend_listen.
func (c Config) validateLend(p *problems) {
	if c.LendListen == "" {
		if c.Lend {
			p.add("lending needs the link's HOST:PORT, like "+strconv.Quote(DefaultLendListen), "lend_listen")
		}
		return
	}
	if _, port, err := net.SplitHostPort(c.LendListen); err != nil || !validPort(port) {
		p.add(fmt.Sprintf("%q is not HOST:PORT with a port from 1 to 65535, like %q", c.LendListen, DefaultLendListen), "lend_listen")
	}
}

// Peer is one [peers.NAME] section: another server whose models this one lists and routes whole
// requests to — another Llamatray, llama-swap, llama.cpp's router, Ollama, or any
// OpenAI-compatible server.
type Peer struct {
	URL    string `toml:"url"`     // http(s)://host:port, optionally with a path prefix ("http://box:11434")
	APIKey string `toml:"api_key"` // sent as "Authorization: Bearer KEY" to this peer only; "" = none
}

// MaxPeerName is the longest peer name accepted.
const MaxPeerName = 64

// CheckPeerName says why name cannot name a peer: 1 to 64 letters, digits, '.', '-' and '_',
// starting with a letter or digit. Names are part of model names ("peer:NAME/ID") and of URLs.
func CheckPeerName(name string) error {
	if name == "" {
		return fmt.Errorf("empty peer name")
	}
	if len(name) > MaxPeerName {
		return fmt.Errorf("peer name %q is longer than %d characters", name, MaxPeerName)
	}
	if r := []rune(name)[0]; notNameRune(r) || strings.ContainsRune(".-_", r) {
		return fmt.Errorf("peer name %q must start with a letter or digit", name)
	}
	if strings.IndexFunc(name, notNameRune) >= 0 {
		return fmt.Errorf("peer name %q may hold only letters, digits, '.', '-' and '_'", name)
	}
	return nil
}

// CheckPeerURL says why u cannot be a peer's address: it must be an absolute http or https URL
// with a host, and no user, query or fragment (the key goes in api_key).
func CheckPeerURL(u string) error {
	p, err := url.Parse(u)
	if err != nil {
		return fmt.Errorf("not a URL: %w", err)
	}
	switch {
	case p.Scheme != "http" && p.Scheme != "https":
		return fmt.Errorf("%q: the scheme must be http or https", u)
	case p.Host == "" || p.Hostname() == "":
		return fmt.Errorf("%q has no host", u)
	case p.User != nil:
		return fmt.Errorf("%q holds a user or password; put the key in api_key", u)
	case p.RawQuery != "" || p.ForceQuery || p.Fragment != "":
		return fmt.Errorf("%q must have no query or fragment", u)
	}
	return nil
}

// PeerOf checks a peer to add, at rawURL (kept without a trailing '/') and named name, or when
// that is empty PeerName(rawURL); it returns the name and the URL.
func PeerOf(name, rawURL string) (string, string, error) {
	if err := CheckPeerURL(rawURL); err != nil {
		return "", "", err
	}
	name = cmp.Or(name, PeerName(rawURL))
	return name, strings.TrimRight(rawURL, "/"), CheckPeerName(name)
}

// PeerName is a peer name made from u's host: its letters, digits, '.', '-' and '_' ("peer" when
// none is left), as `llamatray peer add` names a peer given no --name.
func PeerName(u string) string {
	host := u
	if p, err := url.Parse(u); err == nil && p.Hostname() != "" {
		host = p.Hostname()
		if port := p.Port(); port != "" {
			host += "-" + port
		}
	}
	var b strings.Builder
	for _, c := range host {
		if !notNameRune(c) {
			b.WriteRune(c)
		} else if b.Len() > 0 {
			b.WriteByte('-')
		}
	}
	name := strings.Trim(b.String(), ".-_")
	return cmp.Or(name[:min(len(name), MaxPeerName)], "peer")
}

// SetPeer puts peer name into c, in place of the one of that name.
func (c *Config) SetPeer(name string, p Peer) {
	if c.Peers == nil {
		c.Peers = map[string]Peer{}
	}
	c.Peers[name] = p
}

// RemovePeer takes peer name out of c; false when c has none of that name.
func (c *Config) RemovePeer(name string) bool {
	if _, ok := c.Peers[name]; !ok {
		return false
	}
	delete(c.Peers, name)
	if len(c.Peers) == 0 {
		c.Peers = nil
	}
	return true
}

// checkAPIKey refuses what cannot go in an Authorization header.
func checkAPIKey(k string) error {
	if strings.TrimSpace(k) != k {
		return fmt.Errorf("the key starts or ends with spaces")
	}
	for _, c := range k {
		if c < 0x20 || c == 0x7f || c > 0x7e {
			return fmt.Errorf("the key may hold only printable ASCII characters")
		}
	}
	return nil
}

// validatePeers checks every [peers.NAME] section.
func (c Config) validatePeers(p *problems) {
	seen := map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(c.Peers)) {
		peer := c.Peers[name]
		if err := CheckPeerName(name); err != nil {
			p.add(err.Error(), "peers", name)
			continue
		}
		if other, ok := seen[strings.ToLower(name)]; ok {
			p.add(fmt.Sprintf("differs from peer %q only in case", other), "peers", name)
		}
		seen[strings.ToLower(name)] = name
		if err := CheckPeerURL(peer.URL); err != nil {
			p.add(err.Error(), "peers", name, "url")
		}
		if err := checkAPIKey(peer.APIKey); err != nil {
			p.add(err.Error(), "peers", name, "api_key")
		}
	}
}

// peers writes the [peers.NAME] sections, or their commented example when there are none.
func (r *renderer) peers(peers map[string]Peer) {
	r.b.WriteString(peerComment)
	if len(peers) == 0 {
		r.b.WriteString(peerExample)
		return
	}
	for _, name := range slices.Sorted(maps.Keys(peers)) {
		p := peers[name]
		fmt.Fprintf(&r.b, "[peers.%s]\nurl = %s\n", r.str(name), r.str(p.URL))
		if p.APIKey != "" {
			fmt.Fprintf(&r.b, "api_key = %s\n", r.str(p.APIKey))
		}
	}
}

const peerComment = `
# Other machines: servers whose models are listed here beside this machine's, each under its own ID
# (owned_by "peer:NAME"), and whose requests are sent there whole. A model of this machine with the
# same ID wins; "peer:NAME/ID" always names the peer's. Names: letters, digits, '.', '-' and '_'.
# api_key is sent to that peer only ("Authorization: Bearer KEY"); the client's own key never is.
# "llamatray peer add URL" adds one.
`

const peerExample = `# [peers.desktop]
# url = "http://192.168.1.20:8080"     # another Llamatray, llama-swap, llama.cpp's router, Ollama, ...
# api_key = "secret"                   # optional
`
