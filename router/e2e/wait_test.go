package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/testbed"
	"github.com/llamatray/llamatray/router/wire"
)

// issue 15 item 5: with room for one model, a long stream on alpha and a request for beta queued,
// GET /models says why beta waits — first in line, every model busy, alpha with its one request —
// and beta's streaming client, which asked for progress, is told the same in its comment lines.
func TestWhyItWaits(t *testing.T) {
	in := startWidth(t, slowWidth, []string{"alpha", "beta"}, func(c *config.Config) {
		// alpha's stream must outlast beta's first progress comment (a second) and the polls below on
		// any machine: 15,000 tokens, not 1,500, which a fast CPU makes in under a second
		c.Defaults.CtxSize = 16384
		c.MaxLoaded = 1
		c.FairWait = config.Duration(time.Minute) // no drain during the test: beta stays blocked
		c.QueueTimeout = config.Duration(time.Minute)
		c.StreamLoadingProgress = true
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := in.svc.Engine().Load(ctx, "alpha"); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(ctx, "POST", in.base+"/v1/chat/completions", bytes.NewReader(chatBody("alpha", true, 15000)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("alpha's stream: %v %v", err, resp)
	}
	defer resp.Body.Close()
	if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
		t.Fatal(err)
	}

	breq, _ := http.NewRequestWithContext(ctx, "POST", in.base+"/v1/chat/completions", bytes.NewReader(chatBody("beta", true, 4)))
	bresp, err := http.DefaultClient.Do(breq) // progress comments start after a second, with 200 and the headers
	if err != nil || bresp.StatusCode != 200 {
		t.Fatalf("beta: %v %v", err, bresp)
	}
	defer bresp.Body.Close()

	var beta wire.ModelStatus
	testbed.WaitFor(t, 10*time.Second, "GET /models to say why beta waits", func() bool {
		r, err := http.Get(in.base + "/models")
		if err != nil {
			t.Fatal(err)
		}
		defer r.Body.Close()
		var l wire.ModelList
		if err := json.NewDecoder(r.Body).Decode(&l); err != nil {
			t.Fatal(err)
		}
		for _, m := range l.Data {
			if m.ID == "beta" {
				beta = m.Status
			}
		}
		return beta.Wait != nil
	})
	w := beta.Wait
	if beta.Queued != 1 || w.Kind != "busy" || w.Position != 1 || len(w.Holders) != 1 || w.Holders[0].ID != "alpha" ||
		w.Holders[0].ActiveRequests != 1 || w.MaxLoaded != 1 || w.BusySince == nil || w.NeedBytes <= 0 {
		t.Fatalf("beta %d queued, wait %+v", beta.Queued, w)
	}
	if !strings.HasPrefix(w.Text, "waiting: every model is busy since ") || !strings.Contains(w.Text, "(alpha 1 request)") {
		t.Fatalf("text %q", w.Text)
	}
	t.Logf("GET /models: beta %q", w.Text)

	line, err := bufio.NewReader(bresp.Body).ReadString('\n')
	if err != nil || line != ": loading model beta ("+w.Text+")\n" {
		t.Fatalf("beta's progress comment %q (%v), want the reason %q", line, err, w.Text)
	}
	cancel() // both clients leave; the cleanup checks no lease is left
	_, _ = io.Copy(io.Discard, resp.Body)
	testbed.WaitFor(t, 10*time.Second, "beta to leave the queue", func() bool { return in.state("beta").Queued == 0 && in.state("alpha").Active == 0 })
}
