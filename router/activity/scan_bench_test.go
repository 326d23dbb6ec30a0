package activity

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// BenchmarkScanner reads a llama-server chat answer (timings and usage in it) through a Scanner, as
// the proxy does with every JSON answer.
func BenchmarkScanner(b *testing.B) {
	answer := []byte(`{"choices":[{"finish_reason":"length","index":0,"message":{"role":"assistant","content":"` + strings.Repeat("word ", 8) +
		`"}}],"created":1764600000,"model":"bench","system_fingerprint":"b11669","object":"chat.completion",` +
		`"usage":{"completion_tokens":8,"prompt_tokens":24,"total_tokens":32},"id":"chatcmpl-x",` +
		`"timings":{"cache_n":23,"prompt_n":1,"prompt_ms":0.412,"prompt_per_token_ms":0.412,"prompt_per_second":2427.18,` +
		`"predicted_n":8,"predicted_ms":3.518,"predicted_per_token_ms":0.43975,"predicted_per_second":2274.02}}`)
	buf := make([]byte, 32<<10)
	b.SetBytes(int64(len(answer)))
	b.ReportAllocs()
	for b.Loop() {
		var got *Usage
		s := NewScanner(io.NopCloser(bytes.NewReader(answer)), func(u *Usage) { got = u })
		for {
			if _, err := s.Read(buf); err != nil {
				break
			}
		}
		_ = s.Close()
		if !got.HasTimings || !got.HasUsage || got.Timings.PredictedN != 8 {
			b.Fatalf("usage not read: %+v", got)
		}
	}
}
