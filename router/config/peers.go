package config

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
)

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
	for i, c := range name {
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if i == 0 && !alnum {
			return fmt.Errorf("peer name %q must start with a letter or digit", name)
		}
		if !alnum && c != '.' && c != '-' && c != '_' {
			return fmt.Errorf("peer name %q may hold only letters, digits, '.', '-' and '_'", name)
		}
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
func (c Config) validatePeers() []error {
	var errs []error
	names := slices.Sorted(maps.Keys(c.Peers))
	seen := map[string]string{}
	for _, name := range names {
		p := c.Peers[name]
		if err := CheckPeerName(name); err != nil {
			errs = append(errs, &FieldError{Key: []string{"peers", name}, Reason: err.Error()})
			continue
		}
		if other, ok := seen[strings.ToLower(name)]; ok {
			errs = append(errs, &FieldError{Key: []string{"peers", name}, Reason: fmt.Sprintf("differs from peer %q only in case", other)})
		}
		seen[strings.ToLower(name)] = name
		if err := CheckPeerURL(p.URL); err != nil {
			errs = append(errs, &FieldError{Key: []string{"peers", name, "url"}, Reason: err.Error()})
		}
		if err := checkAPIKey(p.APIKey); err != nil {
			errs = append(errs, &FieldError{Key: []string{"peers", name, "api_key"}, Reason: err.Error()})
		}
	}
	return errs
}

// clonePeers is a copy of peers that shares no memory with it (Peer holds no references).
func clonePeers(peers map[string]Peer) map[string]Peer { return maps.Clone(peers) }

// peers writes the [peers.NAME] sections, or their commented example when there are none.
func (r *renderer) peers(peers map[string]Peer) {
	r.b.WriteString(peerComment)
	if len(peers) == 0 {
		r.b.WriteString(peerExample)
		return
	}
	names := slices.Sorted(maps.Keys(peers))
	for _, name := range names {
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
