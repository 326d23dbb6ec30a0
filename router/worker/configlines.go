package worker

import (
	"fmt"
	"net"
	"os"
	"strings"
)

// ConfigLines are the head's config lines for a worker named name whose link listens on addr with
// token: a [workers.NAME] section to paste. A wildcard listen address is replaced by this machine's
// host name (or a placeholder): the head needs an address it can reach.
func ConfigLines(name, addr, token string) string {
	host, port, _ := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "THIS-MACHINE"
		if h, err := os.Hostname(); err == nil && h != "" {
			host = h
		}
	}
	return fmt.Sprintf("[workers.%s]\naddress = %q\ntoken = %q\n", ConfigName(name), net.JoinHostPort(host, port), token)
}

// ConfigName is name as a worker name the head's config accepts: letters, digits, '.', '-', '_'.
func ConfigName(name string) string {
	k := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_' {
			return r
		}
		return '-'
	}, name)
	if k == "" {
		return "worker"
	}
	return k
}
