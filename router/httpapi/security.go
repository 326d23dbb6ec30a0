package httpapi

import (
	"crypto/subtle"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// corsAllowHeaders are always allowed in preflights, besides the ones the browser asks for.
const corsAllowHeaders = "Authorization, Content-Type, X-Api-Key, Anthropic-Version, X-Request-Id"

// checkHost refuses requests whose Host header is not a name this router answers to, which defeats
// DNS rebinding (a page on evil.example whose name is re-pointed at 127.0.0.1 still sends
// "Host: evil.example"). Accepted: localhost and loopback addresses with any port, the host of the
// listen address, Options.AllowedHosts ("*" accepts all), and — when listening on every interface —
// any IP literal, since rebinding needs a DNS name.
func (srv *Server) checkHost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !srv.hostAllowed(r.Host) {
			writeError(w, r, errHostNotAllowed)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (srv *Server) hostAllowed(hostport string) bool {
	host := hostOf(hostport)
	if host == "" {
		return false
	}
	if isLoopbackHost(host) {
		return true
	}
	for _, a := range srv.o.AllowedHosts {
		if a = hostOf(strings.TrimSpace(a)); a == "*" || a == host {
			return true
		}
	}
	listen := hostOf(srv.o.Listen)
	if listen == host {
		return true
	}
	if la, err := netip.ParseAddr(listen); listen == "" || (err == nil && la.IsUnspecified()) {
		_, err := netip.ParseAddr(host)
		return err == nil
	}
	return false
}

// hostOf is hostport's host, without its port, brackets or final dot, in lower case.
func hostOf(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		hostport = h
	}
	return strings.TrimSuffix(strings.ToLower(strings.Trim(hostport, "[]")), ".")
}

// originAllowed reports whether a browser origin may read responses: http(s) on localhost or a
// loopback address with any port, or one of Options.CORSOrigins. The second result is "*" when that
// wildcard is configured, else the origin itself.
func (srv *Server) originAllowed(origin string) (bool, string) {
	norm := strings.TrimSuffix(strings.ToLower(origin), "/")
	for _, o := range srv.o.CORSOrigins {
		o = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(o)), "/")
		if o == "*" {
			return true, "*"
		}
		if o == norm {
			return true, origin
		}
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.User != nil {
		return false, ""
	}
	return isLoopbackHost(u.Hostname()), origin
}

// cors answers preflights and adds CORS headers for allowed origins, and decides whether a request
// is cross-site: it carries an Origin the policy does not allow, or no Origin and
// "Sec-Fetch-Site: cross-site" (an <img> or a no-cors fetch of another site's page). A cross-site
// request gets no CORS headers, so the browser hides the response; its preflights and its non-GET
// requests are refused with 403 (a form or "simple" POST must not load or unload models), and its
// GETs and HEADs may only read: the handlers ask crossSite before they would start a load, a rescan
// or a call to the Hub or GitHub. An allowed Origin is trusted whatever Sec-Fetch-Site says.
// Requests with neither header (curl, SDKs) are not cross-site.
func (srv *Server) cors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin == "" {
			if r.Header.Get("Sec-Fetch-Site") == "cross-site" {
				serveCrossSite(w, r, next, false)
				return
			}
			next.ServeHTTP(w, r)
			return
		}
		preflight := r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != ""
		h := w.Header()
		h.Add("Vary", "Origin")
		ok, allow := srv.originAllowed(origin)
		if !ok {
			serveCrossSite(w, r, next, preflight)
			return
		}
		h.Set("Access-Control-Allow-Origin", allow)
		if !preflight {
			h.Set("Access-Control-Expose-Headers", "X-Request-Id, Retry-After")
			next.ServeHTTP(w, r)
			return
		}
		h.Add("Vary", "Access-Control-Request-Method")
		h.Add("Vary", "Access-Control-Request-Headers")
		h.Set("Access-Control-Allow-Methods", "GET, POST, PUT, PATCH, DELETE, OPTIONS")
		allowHeaders := corsAllowHeaders
		if req := r.Header.Get("Access-Control-Request-Headers"); req != "" && validHeaderList(req) {
			allowHeaders += ", " + req
		}
		h.Set("Access-Control-Allow-Headers", allowHeaders)
		h.Set("Access-Control-Max-Age", "600")
		w.WriteHeader(http.StatusNoContent)
	})
}

// serveCrossSite refuses a cross-site preflight or write, and marks a cross-site read so that it
// has no effects (see crossSite).
func serveCrossSite(w http.ResponseWriter, r *http.Request, next http.Handler, preflight bool) {
	if preflight || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
		writeError(w, r, errOriginForbidden)
		return
	}
	if info := infoFrom(r.Context()); info != nil {
		info.crossSite = true
	}
	next.ServeHTTP(w, r)
}

// crossSite reports a read that a page of another site sent (cors decides): it is answered only from
// models already running (checkAutoload), rescans nothing and calls nothing outside (outbound).
func crossSite(r *http.Request) bool {
	info := infoFrom(r.Context())
	return info != nil && info.crossSite
}

// outbound refuses a cross-site request that would make Llamatray call the Hub or GitHub.
func outbound(r *http.Request) error {
	if crossSite(r) {
		return errCrossSiteOutbound
	}
	return nil
}

// validHeaderList reports whether s is a comma-separated list of header-name tokens, so echoing it
// cannot inject anything.
func validHeaderList(s string) bool {
	if len(s) > 2048 {
		return false
	}
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" || strings.ContainsFunc(f, func(c rune) bool {
			return !(c == '-' || c == '_' || c == '.' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z')
		}) {
			return false
		}
	}
	return true
}

// auth requires one of Options.APIKeys when any is configured, as "Authorization: Bearer K" or
// "x-api-key: K". /health stays open so clients can find a running instance. The credentials are
// the router's own: the proxy never forwards them to a child.
func (srv *Server) auth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(srv.keys) == 0 || isHealth(r.URL.Path) || srv.keyOK(r) {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="llamatray"`)
		writeError(w, r, errUnauthorized)
	})
}

// isHealth reports the liveness paths, which stay open and are logged at debug level.
func isHealth(path string) bool { return path == "/health" || path == "/v1/health" }

func (srv *Server) keyOK(r *http.Request) bool {
	var given []string
	if a := r.Header.Get("Authorization"); len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
		given = append(given, strings.TrimSpace(a[7:]))
	}
	if k := r.Header.Get("X-Api-Key"); k != "" {
		given = append(given, strings.TrimSpace(k))
	}
	for _, g := range given {
		for _, k := range srv.keys {
			if subtle.ConstantTimeCompare([]byte(g), k) == 1 {
				return true
			}
		}
	}
	return false
}
