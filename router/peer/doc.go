// Package peer keeps the models of other servers — another Llamatray, llama-swap, llama.cpp's
// router, Ollama, or any OpenAI-compatible server — that this one lists and routes whole requests
// to. One goroutine per peer reads the peer's model list (/v1/models, else Ollama's /api/tags) every
// Refresh while it answers, and with exponential backoff while it does not; the Set holds the table
// of every peer's models, from which Route picks the peer of a request no local model takes
// (router/httpapi forwards it there) and Listed lists them.
//
// A peer's own peers' models (owned_by "peer:...") are not taken in: a request goes at most one
// hop, so two instances that are each other's peers never send a request round in a loop.
package peer

import "strings"

// RefPrefix starts the name that always reaches a peer's model, "peer:NAME/ID", even where a local
// model has the ID. No catalog ID or Hub name (ORG/REPO:QUANT) starts with it: a Hub organization
// has no ':' in its name.
const RefPrefix = "peer:"

// Ref is the unambiguous name of model id of peer name.
func Ref(name, id string) string { return RefPrefix + name + "/" + id }

// ParseRef splits "peer:NAME/ID"; ok is false for any other name.
func ParseRef(s string) (name, id string, ok bool) {
	rest, found := strings.CutPrefix(s, RefPrefix)
	if !found {
		return "", "", false
	}
	name, id, found = strings.Cut(rest, "/")
	if !found || name == "" || id == "" {
		return "", "", false
	}
	return name, id, true
}

// OwnedBy is the owned_by of a peer's model in this instance's lists.
func OwnedBy(name string) string { return "peer:" + name }
