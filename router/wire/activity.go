package wire

import "time"

// Activity is the GET /api/activity document: per model, what its requests did over the last hour,
// in buckets. No prompt or answer text is kept, only counts and timings.
type Activity struct {
	Since         time.Time       `json:"since"`          // start of the first bucket
	BucketSeconds int             `json:"bucket_seconds"` // width of one bucket
	Models        []ModelActivity `json:"models"`         // models with a request in the window, by ID
}

// ModelActivity is one model's activity.
type ModelActivity struct {
	Model   string          `json:"model"`
	Total   ActivityStats   `json:"total"`   // the whole window
	Buckets []ActivityStats `json:"buckets"` // oldest first, one per bucket from since, empty ones included
}

// ActivityStats sums the requests of one bucket (or of the window). Time to first token is the
// queue wait (which includes a load) plus the prompt processing time llama-server reports in its
// "timings"; tokens per second is the generated tokens over their generation time, both from
// "timings". Means are over the requests that reported them.
type ActivityStats struct {
	Start           time.Time `json:"start"`
	Requests        int       `json:"requests"`
	Errors          int       `json:"errors"` // answered with a status of 400 or more, or failed
	TokensIn        int64     `json:"tokens_in"`
	TokensOut       int64     `json:"tokens_out"`
	TTFTMs          float64   `json:"ttft_ms"`           // mean time to first token
	TokensPerSecond float64   `json:"tokens_per_second"` // generation speed
	QueueWaitMs     float64   `json:"queue_wait_ms"`     // mean wait for the model (queue and load)
	MaxQueueWaitMs  float64   `json:"max_queue_wait_ms"`
	// Speculative decoding, where llama-server reports it (a model with a draft): tokens the draft
	// proposed, how many were accepted, and their ratio. Absent without a draft.
	DraftTokens     int64   `json:"draft_tokens,omitempty"`
	DraftAccepted   int64   `json:"draft_accepted,omitempty"`
	DraftAcceptance float64 `json:"draft_acceptance,omitempty"`
}
