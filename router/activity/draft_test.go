package activity

import (
	"testing"
	"time"
)

// llama-server 0.7.0's last stream event of a model with a draft, as it came from the real binary.
const draftStream = "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n" +
	"data: {\"choices\":[{\"finish_reason\":\"length\",\"index\":0,\"delta\":{}}],\"object\":\"chat.completion.chunk\"," +
	"\"timings\":{\"cache_n\":0,\"prompt_n\":54,\"prompt_ms\":88.021,\"prompt_per_token_ms\":1.63,\"prompt_per_second\":613.48," +
	"\"predicted_n\":32,\"predicted_ms\":230.416,\"predicted_per_token_ms\":7.43,\"predicted_per_second\":134.53,\"draft_n\":212,\"draft_n_accepted\":53}}\n\n" +
	"data: [DONE]\n\n"

// The draft's tokens proposed and accepted are read from the timings and summed per bucket, and
// the acceptance rate is their ratio; answers without a draft leave it out.
func TestDraftAcceptance(t *testing.T) {
	for _, chunk := range []int{0, 1, 7} {
		_, u := scanAll(t, draftStream, chunk)
		if u.Timings.DraftN != 212 || u.Timings.DraftAccepted != 53 || u.Timings.PredictedN != 32 {
			t.Fatalf("chunk %d: %+v", chunk, u.Timings)
		}
	}
	_, drafted := scanAll(t, draftStream, 0)
	_, plain := scanAll(t, chatStream, 0)
	now := time.Unix(1_800_000_000, 0)
	r := New(time.Minute, 60)
	r.SetClock(func() time.Time { return now })
	r.Record(Sample{Model: "m", End: now, Status: 200, Usage: drafted})
	r.Record(Sample{Model: "m", End: now, Status: 200, Usage: drafted})
	r.Record(Sample{Model: "m", End: now, Status: 200, Usage: plain})
	r.Record(Sample{Model: "other", End: now, Status: 200, Usage: plain})
	doc := r.Snapshot()
	if len(doc.Models) != 2 {
		t.Fatalf("%+v", doc.Models)
	}
	m, other := doc.Models[0].Total, doc.Models[1].Total
	if m.DraftTokens != 424 || m.DraftAccepted != 106 || m.DraftAcceptance != 0.25 {
		t.Fatalf("m: %+v", m)
	}
	if other.DraftTokens != 0 || other.DraftAcceptance != 0 {
		t.Fatalf("other: %+v", other)
	}
}
