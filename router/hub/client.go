// Package hub talks to the Hugging Face Hub: it searches GGUF repos, lists a repo's GGUF files by
// quantization, reads a file's GGUF header with range requests to tell whether it fits, and
// downloads into the Hub's own cache layout (shared with llama.cpp and the Hub's tools) with
// resume, sha256 verification and cancellation.
package hub

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/llamatray/llamatray/router/atomicfile"
	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/internal/neterr"
)

// DefaultEndpoint is the Hub; the env var HF_ENDPOINT replaces it, as in the Hub's own clients.
const DefaultEndpoint = "https://huggingface.co"

// Client is a Hub client. Its methods are safe for concurrent use.
type Client struct {
	Endpoint  string       // base URL without a trailing slash
	Token     string       // sent as a bearer token to the Endpoint's host only; "" = anonymous
	HTTP      *http.Client // nil → a client that never forwards the token after a redirect to another host
	UserAgent string
	// StallTimeout ends a download request that brought no byte for this long (it is retried
	// from where it stopped); 0 means download.DefaultStall.
	StallTimeout time.Duration
}

// FromEnv returns a client configured like the Hub's own clients: HF_ENDPOINT, HF_TOKEN, else the
// token file ($HF_HOME/token, ~/.cache/huggingface/token). getenv nil means os.Getenv.
func FromEnv(getenv func(string) string) *Client {
	getenv = orGetenv(getenv)
	c := &Client{Endpoint: DefaultEndpoint, UserAgent: "llamatray"}
	if e := strings.TrimRight(strings.TrimSpace(getenv("HF_ENDPOINT")), "/"); e != "" {
		c.Endpoint = e
	}
	c.Token = tokenFromEnv(getenv)
	return c
}

// orGetenv is getenv, or os.Getenv when nil.
func orGetenv(getenv func(string) string) func(string) string {
	if getenv == nil {
		return os.Getenv
	}
	return getenv
}

func tokenFromEnv(getenv func(string) string) string {
	if t := strings.TrimSpace(getenv("HF_TOKEN")); t != "" {
		return t
	}
	path := TokenPath(getenv)
	if path == "" {
		return ""
	}
	b, err := os.ReadFile(path)
	if err != nil || len(b) > maxToken {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// defaultHTTP has no overall timeout (downloads are long; contexts bound them) but bounds the
// wait for response headers. Redirects to another host drop Authorization (Go does so for hosts
// that are not the original's subdomains; authorize also never adds it there).
var defaultHTTP = &http.Client{
	Transport: &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		ResponseHeaderTimeout: 60 * time.Second,
		IdleConnTimeout:       90 * time.Second,
		MaxIdleConnsPerHost:   4,
	},
	CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if len(via) >= 10 {
			return errors.New("too many redirects")
		}
		if req.URL.Host != via[0].URL.Host {
			req.Header.Del("Authorization")
		}
		return nil
	},
}

func (c *Client) httpClient() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return defaultHTTP
}

// host is the Endpoint's host, the only one the token goes to.
func (c *Client) host() string {
	u, err := url.Parse(c.Endpoint)
	if err != nil {
		return ""
	}
	return u.Host
}

// newRequest builds a request for an Endpoint path (or an absolute URL), with the token when the
// URL's host is the Hub's.
func (c *Client) newRequest(ctx context.Context, method, pathOrURL string) (*http.Request, error) {
	u := pathOrURL
	if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
		u = c.Endpoint + pathOrURL
	}
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return nil, err
	}
	if c.UserAgent != "" {
		req.Header.Set("User-Agent", c.UserAgent)
	}
	if c.Token != "" && req.URL.Host == c.host() {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	return req, nil
}

// Error is an error answer of the Hub. Gated and private repos answer 401 or 403 with an
// X-Error-Code header (GatedRepo, RepoNotFound, ...) and a message.
type Error struct {
	Status  int
	Code    string // X-Error-Code
	Message string // X-Error-Message, or the JSON body's "error"
	Repo    string
	Token   bool // a token was sent
}

func (e *Error) Error() string {
	what := "the Hugging Face Hub"
	if e.Repo != "" {
		what = e.Repo
	}
	denied := e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden
	hub := ""
	if e.Message != "" {
		hub = " (Hub: " + e.Message + ")"
	}
	switch {
	case e.NotFound() && e.Status != http.StatusNotFound:
		msg := fmt.Sprintf("%s: not found on the Hugging Face Hub (HTTP %d)", what, e.Status)
		if !e.Token {
			msg += "; if it is a private repo, set HF_TOKEN"
		}
		return msg
	case denied && !e.Token:
		return fmt.Sprintf("%s: HTTP %d: this repo is gated or private and no Hugging Face token is set: accept its terms on the Hub, then set HF_TOKEN or log in with `hf auth login`%s", what, e.Status, hub)
	case denied:
		return fmt.Sprintf("%s: HTTP %d: the Hugging Face token has no access to this repo (accept its terms on the Hub, or check the token)%s", what, e.Status, hub)
	case e.Status == http.StatusNotFound:
		return fmt.Sprintf("%s: not found on the Hugging Face Hub", what)
	case e.Message != "":
		return fmt.Sprintf("%s: HTTP %d: %s", what, e.Status, e.Message)
	}
	return fmt.Sprintf("%s: HTTP %d", what, e.Status)
}

// Gated reports whether the Hub refused for want of access.
func (e *Error) Gated() bool {
	return (e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden) && !e.NotFound()
}

// NotFound reports a missing repo, revision or file. The Hub answers 404, or 401 with
// X-Error-Code RepoNotFound to a client without a token (it does not tell missing repos from
// private ones then).
func (e *Error) NotFound() bool {
	switch e.Code {
	case "RepoNotFound", "RevisionNotFound", "EntryNotFound":
		return true
	}
	return e.Status == http.StatusNotFound
}

// hubError reads an error answer (and closes its body).
func hubError(resp *http.Response, repo string) error {
	defer resp.Body.Close()
	e := &Error{Status: resp.StatusCode, Code: resp.Header.Get("X-Error-Code"), Message: resp.Header.Get("X-Error-Message"), Repo: repo,
		Token: resp.Request != nil && resp.Request.Header.Get("Authorization") != ""}
	if e.Message == "" {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		var doc struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(b, &doc) == nil {
			e.Message = doc.Error
		}
	}
	return e
}

// getJSON GETs an Endpoint path (or a URL) into out, bounded in size, and returns the answer's
// rel="next" link (a tree listing is paginated).
func (c *Client) getJSON(ctx context.Context, path, repo string, out any) (next string, err error) {
	req, err := c.newRequest(ctx, http.MethodGet, path)
	if err != nil {
		return "", err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.httpClient().Do(req)
	if err != nil {
		return "", c.unreachable(err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", hubError(resp, repo)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(capReader(resp.Body, maxAPIAnswer, "the answer to "+path)).Decode(out); err != nil {
		return "", fmt.Errorf("the Hugging Face Hub at %s: unreadable answer to %s: %w", c.Endpoint, path, err)
	}
	return nextLink(resp.Header.Get("Link")), nil
}

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

// TokenPath is where the Hub's own tools keep the token: $HF_TOKEN_PATH, else $HF_HOME/token
// (~/.cache/huggingface/token). "" when no home is known.
func TokenPath(getenv func(string) string) string {
	getenv = orGetenv(getenv)
	if p := getenv("HF_TOKEN_PATH"); p != "" {
		return config.ExpandHome(p)
	}
	home := config.HubHome(getenv)
	if home == "" {
		return ""
	}
	return filepath.Join(home, "token")
}

// maxToken bounds a token read or written (the Hub's are under 100 characters).
const maxToken = 4096

// CheckToken refuses what cannot be a Hub token: spaces, control characters, or too long.
func CheckToken(token string) error {
	switch {
	case len(token) > maxToken:
		return fmt.Errorf("a Hugging Face token is not %d characters long", len(token))
	case strings.ContainsFunc(token, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		return fmt.Errorf("a Hugging Face token has no spaces or control characters; paste only the token (hf_…)")
	}
	return nil
}

// SaveToken writes token where the Hub's tools read it (TokenPath), readable by this user only,
// replacing what was there; "" removes the file. It returns the path.
func SaveToken(getenv func(string) string, token string) (string, error) {
	token = strings.TrimSpace(token)
	if err := CheckToken(token); err != nil {
		return "", err
	}
	path := TokenPath(getenv)
	if path == "" {
		return "", fmt.Errorf("no home folder to keep the Hugging Face token in: set HF_HOME")
	}
	if token == "" {
		if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
			return "", fmt.Errorf("removing the Hugging Face token: %w", err)
		}
		return path, nil
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("saving the Hugging Face token: %w", err)
	}
	if err := atomicfile.Write(path, []byte(token), 0o600); err != nil {
		return "", fmt.Errorf("saving the Hugging Face token: %w", err)
	}
	return path, nil
}

// TokenSource says where the token in use comes from: "the HF_TOKEN environment variable", the
// token file's path, or "" when there is none.
func TokenSource(getenv func(string) string) string {
	getenv = orGetenv(getenv)
	if strings.TrimSpace(getenv("HF_TOKEN")) != "" {
		return "the HF_TOKEN environment variable"
	}
	if tokenFromEnv(getenv) != "" {
		return TokenPath(getenv)
	}
	return ""
}

// SaveToken saves token where the Hub's tools keep it (see SaveToken) and makes the token now in
// force — HF_TOKEN when set, which wins, else the saved one — the manager's for the pulls and
// requests that start from now on. It returns the file's path.
func (m *Manager) SaveToken(getenv func(string) string, token string) (string, error) {
	getenv = orGetenv(getenv)
	path, err := SaveToken(getenv, token)
	if err != nil {
		return "", err
	}
	m.SetToken(tokenFromEnv(getenv))
	return path, nil
}
