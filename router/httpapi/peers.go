package httpapi

// Peers: other machines' servers ([peers.NAME], router/peer). A request whose model no local model
// takes goes whole to the peer that lists it, or to the one it names as "peer:NAME/ID"; their
// models are listed beside the local ones, owned_by "peer:NAME".

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"

	"github.com/gorilla/mux"

	"github.com/llamatray/llamatray/router/engine"
	"github.com/llamatray/llamatray/router/peer"
	"github.com/llamatray/llamatray/router/proxy"
	"github.com/llamatray/llamatray/router/wire"
)

// peerError is a request a peer could not take: unreachable, or cut midway.
type peerError struct {
	Name, URL string
	Err       error
}

func (e *peerError) Error() string { return fmt.Sprintf("peer %s (%s): %v", e.Name, e.URL, e.Err) }
func (e *peerError) Unwrap() error { return e.Err }

// peerAPIError is errorFor's answer to a peer's errors: a peerError is 502 peer_unreachable.
func peerAPIError(err error) (apiError, bool) {
	if pe := (*peerError)(nil); errors.As(err, &pe) {
		return apiError{Status: http.StatusBadGateway, Type: "server_error", Code: "peer_unreachable", Message: pe.Error()}, true
	}
	return plainFor(peerErrors, err)
}

// peerErrors are the peers' errors answered with one status and code each, and their own message.
var peerErrors = []plainError{
	{[]error{errPeerEditRemote}, http.StatusForbidden, "permission_error", "peer_edit_forbidden"},
	{[]error{peer.ErrLoop}, http.StatusLoopDetected, "invalid_request_error", "peer_loop"},
	{[]error{peer.ErrBusy}, http.StatusServiceUnavailable, "server_error", "peer_busy"},
	{[]error{peer.ErrHop}, http.StatusNotFound, "invalid_request_error", "model_not_found"},
	{[]error{ErrNoSuchPeer}, http.StatusNotFound, "invalid_request_error", "peer_not_found"},
	{[]error{errBadPeer}, http.StatusBadRequest, "invalid_request_error", "invalid_peer"},
}

// servePeer sends the request to a peer when peer.Set.Route says so (a local model, or one being
// pulled, wins over a peer's of the same name); false: it stays here. A request of this instance's
// that came back is refused (peer.Set.CheckLoop).
func (srv *Server) servePeer(w http.ResponseWriter, r *http.Request, name string, body []byte, stream bool, path, rawPath string) bool {
	err := srv.o.Peers.CheckLoop(srv.instance, r.Header, body)
	if err != nil {
		srv.log.Warn("request loop: a request sent to a peer came back", "error", err)
		writeError(w, r, err)
		return true
	}
	local := func(n string) bool { _, err := srv.resolve(n); return err == nil || !isUnknown(err) }
	p, id, ok, err := srv.o.Peers.Route(name, r.Header.Get(peer.ViaHeader) != "", local)
	if errors.Is(err, peer.ErrNoPeer) {
		pname, _, _ := peer.ParseRef(name)
		err = fmt.Errorf("%w (no peer is named %q)", &engine.UnknownModelError{Name: name}, pname)
	}
	if err != nil {
		writeError(w, r, err)
		return true
	}
	if ok {
		srv.forwardPeer(w, r, p, id, body, stream, path, rawPath)
	}
	return ok
}

// forwardPeer proxies r to model id of peer p, unbuffered: the peer's key replaces the client's
// (none is sent when the peer has none), and the body's "model" (or ?model=) becomes the peer's ID.
func (srv *Server) forwardPeer(w http.ResponseWriter, r *http.Request, p peer.Info, id string, body []byte, stream bool, path, rawPath string) {
	ref := peer.Ref(p.Name, id)
	info := infoFrom(r.Context())
	if info != nil {
		info.model, info.routed = ref, true
	}
	base, err := url.Parse(p.URL)
	if err != nil {
		writeError(w, r, &peerError{Name: p.Name, URL: p.URL, Err: err})
		return
	}
	release, err := srv.flight.Acquire(p.Name)
	if err != nil {
		srv.log.Warn("peer request refused", "peer", p.Name, "error", err)
		writeError(w, r, err)
		return
	}
	defer release()
	marker := peer.Marker(srv.instance, p.Name)
	body = peer.Body(body, id, marker)
	if q := r.URL.Query(); q.Get("model") != "" {
		q.Set("model", id)
		u := *r.URL
		u.RawQuery = q.Encode()
		r.URL = &u
	}
	t := info.newTarget(proxyTarget{model: ref, url: base, path: path, rawPath: rawPath, stream: stream})
	proxy.SetBody(r, &t.body, body, true)
	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	out := proxy.OutRequest(r.WithContext(ctx), t.url, t.path, t.rawPath, t.stream, info.requestIDs())
	if out == nil {
		writeError(w, r, fmt.Errorf("%w: the client asked to switch protocols", errUpstream))
		return
	}
	out.Header[peer.ViaHeader] = append(slices.Clone(r.Header.Values(peer.ViaHeader)), marker)
	if p.APIKey != "" {
		out.Header["Authorization"] = []string{"Bearer " + p.APIKey}
	}
	pw := srv.o.Peers.WatchRequest(ctx, cancel, p, srv.peerPoke)
	defer pw.End()
	resp, err := srv.o.Peers.Transport().RoundTrip(out) // its answer begins under pw (see peer.Watch)
	if err != nil {
		srv.o.Peers.Poke(p.Name) // see whether it is down, for the lists
		if r.Context().Err() != nil {
			if info != nil {
				info.status, info.err = statusClientClosed, err
			}
			return
		}
		if c := context.Cause(ctx); c != nil && !errors.Is(c, context.Canceled) {
			err = c
		}
		err = &peerError{Name: p.Name, URL: p.URL, Err: err}
		srv.log.Warn("peer request failed", "peer", p.Name, "model", id, "error", err)
		writeError(w, r, err)
		return
	}
	defer resp.Body.Close()
	if !p.Up() {
		srv.o.Peers.Poke(p.Name) // it answers again: list its models now
	}
	t.status = resp.StatusCode
	proxy.RemoveHopByHop(resp.Header)
	dropCORS(resp.Header)
	resp.Header.Del(requestIDHeader)
	flush := proxy.WriteHead(w, resp)
	if err := srv.copyAnswer(w, pw.Body(resp.Body), flush, ref); err != nil && r.Context().Err() == nil {
		if c := context.Cause(ctx); errors.Is(c, peer.ErrDown) {
			err = c
		}
		srv.peerCut(w, r, p, id, resp, err)
	}
	srv.record(t, 0)
}

// peerCut ends an answer the peer cut midway: a stream gets an error event naming the peer and
// ends cleanly; any other answer ends the client's connection, so it is seen broken, not short.
func (srv *Server) peerCut(w http.ResponseWriter, r *http.Request, p peer.Info, id string, resp *http.Response, err error) {
	err = &peerError{Name: p.Name, URL: p.URL, Err: fmt.Errorf("the answer was cut: %w", err)}
	srv.log.Warn("peer answer cut", "peer", p.Name, "model", id, "error", err)
	srv.o.Peers.Poke(p.Name)
	e, _ := failed(r, err)
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		if r.Context().Value(http.ServerContextKey) != nil {
			panic(http.ErrAbortHandler)
		}
		return
	}
	name, doc := "", e.body()
	if strings.HasPrefix(r.URL.Path, "/v1/messages") { // Anthropic's error event
		name = "error"
		doc, _ = json.Marshal(map[string]any{"type": "error", "error": map[string]string{"type": "api_error", "message": e.Message}})
	}
	_, _ = w.Write(append([]byte("\n"), proxy.SSEEvent(name, doc)...)) // the newline ends a line the cut left open
	_ = http.NewResponseController(w).Flush()
}

// peersWire is every peer for GET /api/peers and /api/status.
func (srv *Server) peersWire() []wire.Peer {
	return srv.o.Peers.Wires(func(id string) bool { _, err := srv.resolve(id); return err == nil })
}

// peerRoutes declares GET and POST /api/peers, DELETE /api/peers/{name} and GET
// /api/peers/discovered (before /api/peers/{name}): the other Llamatrays mDNS found on the local
// network that are not peers yet, only offered (adding one is POST /api/peers).
func (srv *Server) peerRoutes(m *mux.Router) {
	m.HandleFunc("/api/peers", srv.listPeers).Methods(http.MethodGet)
	m.HandleFunc("/api/peers", srv.addPeer).Methods(http.MethodPost)
	m.HandleFunc("/api/peers/discovered", srv.listDiscovered).Methods(http.MethodGet)
	m.HandleFunc("/api/peers/{name}", srv.removePeer).Methods(http.MethodDelete)
}

func (srv *Server) listPeers(w http.ResponseWriter, r *http.Request) {
	wire.Write(w, http.StatusOK, wire.PeerList{Peers: srv.peersWire()})
}

func (srv *Server) listDiscovered(w http.ResponseWriter, r *http.Request) {
	if srv.o.Discovered == nil {
		writeError(w, r, errNotFound)
		return
	}
	l := srv.o.Discovered()
	l.Discovered = wire.List(l.Discovered)
	wire.Write(w, http.StatusOK, l)
}

// Errors of a change of the peers.
var (
	// errNoPeerEdit answers a peer change where the server has no configuration to save it in.
	errNoPeerEdit = fmt.Errorf("%w: peers cannot be changed here", errNotFound)
	// errBadPeer is a peer change the configuration refused (a bad name or URL).
	errBadPeer = errors.New("peer not saved")
	// errPeerEditRemote refuses a peer change from another machine: a peer's URL is called by this
	// instance and its answers are read back, so whoever may set one could make it reach any address
	// it can (link-local, internal services). 403 peer_edit_forbidden.
	errPeerEditRemote = errors.New("peers can be changed only from this machine (a loopback client: `llamatray peer add`, the app, or the configuration file), never from another one, even with an API key")
)

// ErrNoSuchPeer is the removal of a peer that is not configured (Options.RemovePeer wraps it).
var ErrNoSuchPeer = errors.New("no such peer")

// editPeers serves a change of the peers and answers the peers after it. Only a client on this
// machine may make one, and no page of another site (a peer makes Llamatray call out).
func (srv *Server) editPeers(w http.ResponseWriter, r *http.Request, verb string, change func() error) {
	var err error
	switch {
	case crossSite(r):
		err = fmt.Errorf("%w: a page of another site may not %s a peer", errOriginForbidden, verb)
	case !localClient(r):
		err = errPeerEditRemote
	default:
		err = change()
	}
	if err != nil {
		writeError(w, r, err)
		return
	}
	wire.Write(w, http.StatusOK, wire.PeerList{Peers: srv.peersWire()})
}

// addPeer serves POST /api/peers: the peer is saved in the configuration and read at once.
func (srv *Server) addPeer(w http.ResponseWriter, r *http.Request) {
	srv.editPeers(w, r, "add", func() error {
		var req wire.PeerAdd
		if err := srv.readJSON(w, r, &req); err != nil {
			return err
		}
		if srv.o.AddPeer == nil {
			return errNoPeerEdit
		}
		if err := srv.o.AddPeer(req); err != nil {
			return fmt.Errorf("%w: %w", errBadPeer, err)
		}
		return nil
	})
}

// removePeer serves DELETE /api/peers/{name}.
func (srv *Server) removePeer(w http.ResponseWriter, r *http.Request) {
	name, ok := muxVar(r, "name")
	if !ok {
		writeError(w, r, errNotFound)
		return
	}
	srv.editPeers(w, r, "remove", func() error {
		if srv.o.RemovePeer == nil {
			return errNoPeerEdit
		}
		return srv.o.RemovePeer(name)
	})
}

// localClient says r came from this machine: from a loopback address, or from the very address
// it reached (a connection from the machine to one of its own addresses).
func localClient(r *http.Request) bool {
	remote, ok := addrOf(r.RemoteAddr)
	if !ok {
		return false
	}
	if remote.IsLoopback() {
		return true
	}
	la, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if la == nil {
		return false
	}
	local, ok := addrOf(la.String())
	return ok && local == remote
}

// addrOf is the IP of "HOST:PORT", without its zone; false when it is not an IP address.
func addrOf(hostport string) (netip.Addr, bool) {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return netip.Addr{}, false
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}, false
	}
	return a.Unmap().WithZone(""), true
}
