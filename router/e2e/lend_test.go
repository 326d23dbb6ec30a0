package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/testbed"
	"github.com/llamatray/llamatray/router/testbed/ggufwrite"
	"github.com/llamatray/llamatray/router/wire"
	"github.com/llamatray/llamatray/router/worker"
)

// TestLendThisMachine: the tray's "Lend this machine" is the service's lend setting. One instance
// lends its machine (its rpc-server found beside its llama-server, its token kept in its state
// folder); a second instance, given the lines the first one shows, spreads a model over it. The
// token never appears in the API; a new token locks the old one out; turning lending off closes
// the link.
func TestLendThisMachine(t *testing.T) {
	rpcServerBin(t) // skips, or fails under CI, without the rpc-server beside llama-server
	shape := func(string) ggufwrite.LlamaOptions { return ggufwrite.LlamaOptions{Width: 64, Blocks: 4} }
	lendAddr := fmt.Sprintf("127.0.0.1:%d", testbed.FreePort(t))
	lender := startModels(t, shape, []string{"own"}, func(c *config.Config) {
		c.LendListen = lendAddr
	})
	if st := lender.svc.Lending(); st.State != wire.LendOff || st.On {
		t.Fatalf("before lending: %+v", st)
	}
	if err := lender.svc.SetLending(true); err != nil {
		t.Fatal(err)
	}
	testbed.WaitFor(t, 20*time.Second, "lending to start", func() bool {
		st := lender.svc.Lending()
		if st.State == wire.LendFailed {
			t.Fatalf("lending failed: %s", st.Error)
		}
		return st.State == wire.LendOn
	})
	if st := lender.svc.Lending(); st.Addr != lendAddr || !st.On {
		t.Fatalf("lending: %+v, want on at %s", st, lendAddr)
	}
	lines, err := lender.svc.LendConfigLines()
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`token = "([^"]+)"`).FindStringSubmatch(lines)
	if m == nil || !strings.Contains(lines, `address = "`+lendAddr+`"`) {
		t.Fatalf("the head's lines:\n%s", lines)
	}
	token := m[1]
	t.Logf("the lines shown to paste on the head:\n%s", lines)

	// The API says it is lent, and where, never the token.
	resp, err := http.Get(lender.base + "/api/status")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Contains(string(body), token) || !strings.Contains(string(body), `"lending":{"on":true,"state":"on"`) {
		t.Fatalf("/api/status: %s", body)
	}
	ctx := context.Background()
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	if _, err := worker.Check(cctx, lendAddr, "not-the-token-0123456789-abcdefghijkl"); !errors.Is(err, worker.ErrBadToken) {
		t.Fatalf("a wrong token: %v, want ErrBadToken", err)
	}
	cancel()

	// A head given those lines spreads a model over the lent machine.
	ngl := 99
	head := startModels(t, shape, []string{"big"}, func(c *config.Config) {
		c.Workers = map[string]config.Worker{"lent": {Address: lendAddr, Token: token}}
		c.Models = map[string]config.Model{"big": {Workers: []string{"lent"}, GPULayers: &ngl, CtxSize: 4096}}
	})
	if code, body, err := head.chat(ctx, "big", false, 8); err != nil || code != 200 {
		t.Fatalf("big over the lent machine: %d %v %s", code, err, body)
	}
	if w := workersByName(head)["lent"]; w.State != wire.WorkerUp || w.Model != "big" {
		t.Fatalf("the head's worker: %+v", w)
	}
	if err := head.svc.Engine().Unload(ctx, "big", true); err != nil {
		t.Fatal(err)
	}

	// A new token: the old one is refused from now on.
	if err := lender.svc.NewLendToken(); err != nil {
		t.Fatal(err)
	}
	testbed.WaitFor(t, 20*time.Second, "lending to restart with the new token", func() bool {
		return lender.svc.Lending().State == wire.LendOn
	})
	cctx, cancel = context.WithTimeout(ctx, 5*time.Second)
	if _, err := worker.Check(cctx, lendAddr, token); !errors.Is(err, worker.ErrBadToken) {
		t.Fatalf("the old token after a new one: %v, want ErrBadToken", err)
	}
	cancel()

	// Off: nothing listens any more.
	if err := lender.svc.SetLending(false); err != nil {
		t.Fatal(err)
	}
	if st := lender.svc.Lending(); st.State != wire.LendOff || st.On {
		t.Fatalf("after lending off: %+v", st)
	}
	cctx, cancel = context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := worker.Check(cctx, lendAddr, token); !errors.Is(err, worker.ErrUnreachable) {
		t.Fatalf("after lending off: %v, want ErrUnreachable", err)
	}
}
