package wire

import (
	"encoding/json"
	"net/http"
	"time"
)

// Write sends document v with status, as every JSON answer of the API is sent: one line, not cached.
// A v that does not encode is a 500 internal_error in the OpenAI error shape.
func Write(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b, _ = json.Marshal(map[string]any{"error": map[string]any{"message": err.Error(), "type": "server_error", "code": "internal_error"}})
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// Time is t as a document's optional time: null when zero, else in UTC.
func Time(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}

// List is s as a document's list: empty, never null, when s is nil.
func List[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
