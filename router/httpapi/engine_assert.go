package httpapi

import "github.com/llamatray/llamatray/router/engine"

// The real engine must satisfy the interface the HTTP layer is written against.
var _ Engine = (*engine.Engine)(nil)
