// Package worker lends this machine's compute to a Llamatray on another machine (issue #24's
// workers): Serve runs llama.cpp's RPC server bound to loopback only and exposes it through
// Llamatray's own link, TLS 1.3 authenticated by a pairing token; Open gives the head a local
// loopback end of a link (the address llama-server's --rpc gets); Check asks a worker its status.
//
// The link protocol, on one TCP connection:
//
//  1. TLS 1.3. The worker's certificate is self-signed and ephemeral (made at each start, never
//     written to disk): the peers are authenticated by the token, not by the certificate.
//  2. The head sends one JSON line {"link":"llamatray-link/1","proof":HEX,"op":"status"|"rpc","head":NAME},
//     proof = HMAC-SHA256(token, EKM || "head") where EKM is the TLS session's exported keying
//     material (label exporterLabel, 32 bytes). A relay that terminates TLS itself has another EKM
//     on each side, so a proof it passes on does not verify and it cannot learn the token.
//  3. The worker answers one JSON line: {"ok":false,"code":...,"error":...} and closes, or
//     {"ok":true,"proof":HEX,"info":{...}} with proof = HMAC-SHA256(token, EKM || "worker"),
//     sent only after the head's proof verified. The head checks it before it sends anything else.
//  4. For "rpc" the connection then carries llama.cpp's RPC protocol raw, both ways.
//
// Lines are at most maxFrame bytes; the worker gives a connection handshakeTimeout to complete
// steps 1-2 and answers a wrong proof only after badTokenDelay.
package worker

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"time"
)

// handshakeTimeout is how long the worker gives a connection to finish TLS and its request line
// (a variable for the tests of hostile clients).
var handshakeTimeout = 10 * time.Second

const (
	linkVersion   = "llamatray-link/1"
	exporterLabel = "EXPORTER-llamatray-link-auth"
	maxFrame      = 4096

	badTokenDelay = 500 * time.Millisecond
	// maxHandshakes bounds the connections the worker authenticates at once (past it the oldest
	// is closed), and maxHandshakesPerHost those from one host, an IPv4 address or an IPv6 /64
	// (past it a new one is closed at once). A host that opens connections and says nothing holds
	// at most maxHandshakesPerHost for handshakeTimeout each; hosts that together fill
	// maxHandshakes lose their oldest to a head's new one, and a head elsewhere still gets through.
	maxHandshakes        = 64
	maxHandshakesPerHost = 8

	opStatus = "status"
	opRPC    = "rpc"

	codeBadToken = "bad-token"
	codeBusy     = "busy"
	codeBadReq   = "bad-request"
	codeNoRPC    = "rpc-server-down"
)

// Errors of Check and Open, wrapped with the address (and by the End with the worker's name).
var (
	// ErrUnreachable: nothing answers at the address (refused, no route, timed out).
	ErrUnreachable = errors.New("worker unreachable")
	// ErrBadToken: the worker refused the pairing token (or could not prove it knows it).
	ErrBadToken = errors.New("worker refused the token")
	// ErrNotWorker: something answers at the address but it is not a Llamatray worker.
	ErrNotWorker = errors.New("not a Llamatray worker")
	// ErrBusy: the worker is serving another head's RPC session.
	ErrBusy = errors.New("worker busy")
	// ErrWorkerDown: the worker answers but its rpc-server is not running.
	ErrWorkerDown = errors.New("worker's rpc-server not running")
)

// request is the head's line (step 2).
type request struct {
	Link  string `json:"link"`
	Proof string `json:"proof"`
	Op    string `json:"op"`
	Head  string `json:"head,omitempty"`
}

// answer is the worker's line (step 3).
type answer struct {
	OK    bool   `json:"ok"`
	Code  string `json:"code,omitempty"`
	Error string `json:"error,omitempty"`
	Proof string `json:"proof,omitempty"`
	Info  *Info  `json:"info,omitempty"`
}

// Info is a worker's status.
type Info struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	// Busy: an RPC session is open; BusyWith says whose and since when.
	Busy     bool   `json:"busy"`
	BusyWith string `json:"busy_with,omitempty"`
}

// proof is HMAC-SHA256(token, EKM || role) of the TLS session.
func proof(cs tls.ConnectionState, token, role string) ([]byte, error) {
	ekm, err := cs.ExportKeyingMaterial(exporterLabel, nil, 32)
	if err != nil {
		return nil, fmt.Errorf("tls keying material: %w", err)
	}
	m := hmac.New(sha256.New, []byte(token))
	m.Write(ekm)
	m.Write([]byte(role))
	return m.Sum(nil), nil
}

// checkProof compares a hex proof with the expected one in constant time.
func checkProof(cs tls.ConnectionState, token, role, got string) bool {
	want, err := proof(cs, token, role)
	if err != nil {
		return false
	}
	b, err := hex.DecodeString(got)
	if err != nil {
		return false
	}
	return hmac.Equal(b, want)
}

// readLine reads one JSON line of at most maxFrame bytes into v.
func readLine(r *bufio.Reader, v any) error {
	line, err := r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		return fmt.Errorf("line longer than %d bytes", maxFrame)
	}
	if err != nil {
		return err
	}
	if err := json.Unmarshal(line, v); err != nil {
		return fmt.Errorf("not a link message: %w", err)
	}
	return nil
}

// writeLine writes v as one JSON line.
func writeLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// selfSigned makes the worker's ephemeral certificate.
func selfSigned(name string) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "llamatray worker " + name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(10 * 365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

func serverTLS(cert tls.Certificate) *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13}
}

func clientTLS() *tls.Config {
	// The certificate is not verified: the worker proves itself with the token, bound to this
	// very TLS session (see the package comment), which a certificate check would add nothing to.
	return &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS13} //nolint:gosec
}
