package worker

import (
	"crypto/rand"
	"encoding/base32"
	"fmt"
	"strings"
)

// NewToken makes a pairing token: 20 random bytes (160 bits) in lower-case base32, in groups of
// four joined by dashes, e.g. "k3qz-..." (39 characters). It carries no structure: any string
// config.CheckWorkerToken accepts is a valid token.
func NewToken() (string, error) {
	b := make([]byte, 20)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("random token: %w", err)
	}
	s := strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b))
	var out strings.Builder
	for i := 0; i < len(s); i += 4 {
		if i > 0 {
			out.WriteByte('-')
		}
		out.WriteString(s[i:min(i+4, len(s))])
	}
	return out.String(), nil
}
