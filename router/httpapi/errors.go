package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/llamatray/llamatray/router/engine"
	"github.com/llamatray/llamatray/router/releases"
)

// Errors the HTTP layer raises itself. errorFor maps them, and the engine's errors, to responses.
var (
	errBodyRead        = errors.New("reading the request body failed")
	errBodyTimeout     = errors.New("the request body did not arrive in time")
	errModelRequired   = errors.New("model name is missing from the request")
	errModelNotLoaded  = errors.New("model is not loaded") // ?autoload=false, as llama.cpp's router says it
	errUnauthorized    = errors.New("invalid or missing API key")
	errHostNotAllowed  = errors.New("host not allowed")
	errOriginForbidden = errors.New("origin not allowed")
	errNotFound        = errors.New("no such endpoint")
	errMethod          = errors.New("method not allowed")
	errUpstream        = errors.New("upstream llama-server failed")
	errBuildRequired   = errors.New(`build is missing from the request (a llama.cpp build such as "b7100", or "previous")`)
)

// errCrossSiteOutbound refuses a cross-site request (see crossSite) that would make Llamatray call
// out: a page could make every visitor's browser send it.
var errCrossSiteOutbound = fmt.Errorf("%w: a page of another site may not make Llamatray contact the Hugging Face Hub or GitHub", errOriginForbidden)

// statusClientClosed is logged (never sent) when the client went away first, as nginx and Caddy do.
const statusClientClosed = 499

// logTailLines is how many of a failed child's last log lines go into an error message.
const logTailLines = 8

// apiError is one error response in the OpenAI shape {"error":{"message","type","code"}}.
type apiError struct {
	Status     int
	Type       string // invalid_request_error, authentication_error, permission_error, server_error, ...
	Code       string
	Message    string
	RetryAfter time.Duration // > 0 → Retry-After header, in whole seconds, at least 1
}

// errorFor is the one place errors become HTTP statuses and error codes.
//
// A model that cannot fit even with every other model unloaded (*engine.TooLargeError) is
// 507 Insufficient Storage: unlike the 503s it will not succeed later, so it carries no Retry-After.
// Queue timeouts, load failures, a missing llama-server and shutdown are 503 (temporary or fixable
// without changing the request); the first two carry Retry-After when the engine knows when to retry.
func errorFor(err error) apiError {
	if e, ok := hubAPIError(err); ok {
		return e
	}
	if e, ok := peerAPIError(err); ok {
		return e
	}
	var (
		unknown  *engine.UnknownModelError
		queue    *engine.QueueTimeoutError
		load     *engine.LoadError
		tooLarge *engine.TooLargeError
		noServer *engine.NoServerError
		maxBytes *http.MaxBytesError
	)
	switch {
	case errors.As(err, &unknown):
		return apiError{Status: http.StatusNotFound, Type: "invalid_request_error", Code: "model_not_found", Message: unknown.Error()}
	case errors.As(err, &queue):
		return apiError{Status: http.StatusServiceUnavailable, Type: "server_error", Code: "queue_timeout", Message: queue.Error(), RetryAfter: max(queue.RetryAfter, time.Second)}
	case errors.As(err, &load):
		msg := load.Error()
		if tail := lastLines(load.LogTail, logTailLines); len(tail) > 0 {
			msg += "; last log lines:\n" + strings.Join(tail, "\n")
		}
		var wait time.Duration
		if !load.RetryAt.IsZero() {
			wait = max(time.Until(load.RetryAt), time.Second)
		}
		return apiError{Status: http.StatusServiceUnavailable, Type: "server_error", Code: "model_load_failed", Message: msg, RetryAfter: wait}
	case errors.As(err, &tooLarge):
		return apiError{Status: http.StatusInsufficientStorage, Type: "server_error", Code: "model_too_large", Message: tooLarge.Error()}
	case errors.As(err, &noServer):
		return apiError{Status: http.StatusServiceUnavailable, Type: "server_error", Code: "llama_server_not_found", Message: noServer.Error()}
	case errors.Is(err, engine.ErrClosed):
		return apiError{Status: http.StatusServiceUnavailable, Type: "server_error", Code: "shutting_down", Message: err.Error()}
	case errors.As(err, &maxBytes):
		limit := fmt.Sprintf("%d MiB", maxBytes.Limit>>20)
		if maxBytes.Limit < 1<<20 {
			limit = fmt.Sprintf("%d bytes", maxBytes.Limit)
		}
		return apiError{Status: http.StatusRequestEntityTooLarge, Type: "invalid_request_error", Code: "body_too_large",
			Message: "request body is larger than " + limit + " (raise body_limit in the configuration)"}
	}
	if e, ok := plainFor(plainErrors, err); ok {
		return e
	}
	switch {
	case errors.Is(err, context.Canceled):
		return apiError{Status: statusClientClosed, Type: "server_error", Code: "client_closed", Message: "request cancelled by the client"}
	case errors.Is(err, context.DeadlineExceeded):
		return apiError{Status: http.StatusGatewayTimeout, Type: "server_error", Code: "timeout", Message: err.Error()}
	default:
		return apiError{Status: http.StatusInternalServerError, Type: "server_error", Code: "internal_error", Message: err.Error()}
	}
}

// plainError is errors answered with one status and code, and their own message.
type plainError struct {
	errs      []error
	status    int
	typ, code string
}

// plainFor is the answer of the first of list that err is.
func plainFor(list []plainError, err error) (apiError, bool) {
	for _, k := range list {
		if slices.ContainsFunc(k.errs, func(e error) bool { return errors.Is(err, e) }) {
			return apiError{Status: k.status, Type: k.typ, Code: k.code, Message: err.Error()}, true
		}
	}
	return apiError{}, false
}

// plainErrors are the errors, in errorFor's order, answered with one status and code each.
var plainErrors = []plainError{
	{[]error{errBodyTimeout}, http.StatusRequestTimeout, "invalid_request_error", "body_timeout"},
	{[]error{errBodyRead}, http.StatusBadRequest, "invalid_request_error", "body_read_failed"},
	{[]error{errInvalidJSON}, http.StatusBadRequest, "invalid_request_error", "invalid_json"},
	{[]error{errModelNotLoaded}, http.StatusBadRequest, "invalid_request_error", "model_not_loaded"},
	{[]error{errModelRequired}, http.StatusBadRequest, "invalid_request_error", "model_required"},
	{[]error{errUnauthorized}, http.StatusUnauthorized, "authentication_error", "invalid_api_key"},
	{[]error{errHostNotAllowed}, http.StatusForbidden, "permission_error", "host_not_allowed"},
	{[]error{errOriginForbidden}, http.StatusForbidden, "permission_error", "origin_not_allowed"},
	{[]error{errNotFound}, http.StatusNotFound, "invalid_request_error", "not_found"},
	{[]error{errMethod}, http.StatusMethodNotAllowed, "invalid_request_error", "method_not_allowed"},
	{[]error{errUpstream}, http.StatusBadGateway, "server_error", "upstream_error"},
	{[]error{errBuildRequired}, http.StatusBadRequest, "invalid_request_error", "build_required"},
	{[]error{releases.ErrBusy, releases.ErrInUse}, http.StatusConflict, "invalid_request_error", "llama_server_busy"},
	{[]error{releases.ErrNoRelease, releases.ErrNoBuild, releases.ErrNotInstalled}, http.StatusNotFound, "invalid_request_error", "build_not_found"},
	{[]error{releases.ErrDiskFull}, http.StatusInsufficientStorage, "server_error", "disk_full"},
	{[]error{releases.ErrBadTag, releases.ErrUnsafe, releases.ErrTooLarge}, http.StatusBadGateway, "server_error", "release_refused"},
	{[]error{releases.ErrDigest, releases.ErrNoDigest, releases.ErrCut}, http.StatusBadGateway, "server_error", "download_failed"},
}

// lastLines returns at most n trailing lines, skipping blank ones at the end.
func lastLines(lines []string, n int) []string {
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines
}

// retryAfterSeconds renders a Retry-After value: whole seconds, rounded up, at least 1.
func retryAfterSeconds(d time.Duration) string {
	return strconv.Itoa(max(1, int(math.Ceil(d.Seconds()))))
}

func (e apiError) body() []byte {
	b, _ := json.Marshal(e.doc())
	return b
}

// doc is the error document as a value, for wire.Write and event streams.
func (e apiError) doc() map[string]any {
	return map[string]any{"error": map[string]any{"message": e.Message, "type": e.Type, "code": e.Code}}
}

// writeError sends err as an OpenAI-shaped error response and records it for the access log.
func writeError(w http.ResponseWriter, r *http.Request, err error) {
	e, ok := failed(r, err)
	if !ok {
		// Nobody is listening; the access log still records 499.
		if info := infoFrom(r.Context()); info != nil {
			info.status = statusClientClosed
		}
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	if e.RetryAfter > 0 {
		h.Set("Retry-After", retryAfterSeconds(e.RetryAfter))
	}
	w.WriteHeader(e.Status)
	_, _ = w.Write(append(e.body(), '\n'))
}

// failed is errorFor(err), with err noted for the request's access log; false when the client has
// gone and nothing is to be written.
func failed(r *http.Request, err error) (apiError, bool) {
	if info := infoFrom(r.Context()); info != nil {
		info.err = err
	}
	e := errorFor(err)
	return e, e.Status != statusClientClosed
}
