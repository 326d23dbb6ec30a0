package hub

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"

	"github.com/llamatray/llamatray/router/internal/neterr"
)

// ErrUnreachable is matched by the error of a request that never got an answer from the Hub.
var ErrUnreachable = errors.New("cannot reach the Hugging Face Hub")

// unreachable explains a request to the Hub that got no answer: what failed, in words, and what
// to do, with the Go error kept for the log.
func (c *Client) unreachable(err error) error {
	why := "the connection failed"
	var dnsErr *net.DNSError
	var certErr *tls.CertificateVerificationError
	var unknownCA x509.UnknownAuthorityError
	var ne net.Error
	switch {
	case errors.Is(err, context.Canceled):
		return err
	case errors.As(err, &dnsErr):
		why = "its name does not resolve: is this computer offline?"
	case neterr.Refused(err):
		why = "the connection was refused: is a proxy or firewall in the way, or is HF_ENDPOINT wrong?"
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		why = "it did not answer in time: the network is slow or down"
	case errors.As(err, &certErr) || errors.As(err, &unknownCA):
		why = "its certificate is not trusted: a proxy may be intercepting HTTPS"
	}
	return fmt.Errorf("%w at %s: %s (%w)", ErrUnreachable, c.Endpoint, why, err)
}
