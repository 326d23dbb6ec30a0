package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/engine"
	"github.com/llamatray/llamatray/router/testbed"
)

// slowLoad makes Acquire wait until the test sends the outcome on the returned channel: nil → a
// lease, else that error.
func slowLoad(fe *fakeEngine) chan error {
	outcome := make(chan error)
	fe.mu.Lock()
	fe.acquire = func(ctx context.Context, id string) (*engine.Lease, error) {
		select {
		case err := <-outcome:
			if err != nil {
				return nil, err
			}
			return fe.lease(id, 1500*time.Millisecond), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	fe.mu.Unlock()
	return outcome
}

// sseUpstream answers with an SSE body and a header the client must not see after early headers.
func sseUpstream(t testing.TB, status int) *httptest.Server {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Upstream", "yes")
		if status != http.StatusOK {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			fmt.Fprint(w, `{"error":{"code":400,"message":"context too long","type":"invalid_request_error"}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: hello\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(up.Close)
	return up
}

func loadingRouter(t testing.TB, upstream string, progress bool) (*httptest.Server, *fakeEngine) {
	srv, fe, _ := testRouter(t, upstream, func(o *Options) { o.StreamLoadingProgress = progress }, func(server *Server) {
		server.loadingAfter = 20 * time.Millisecond
		server.loadingEvery = 20 * time.Millisecond
	})
	return srv, fe
}

// startStream posts a streaming chat request in the background; the response arrives on the channel.
func startStream(t testing.TB, url string, stream bool) chan *http.Response {
	ch := make(chan *http.Response, 1)
	go func() {
		resp, err := http.Post(url+"/v1/chat/completions", "application/json",
			strings.NewReader(fmt.Sprintf(`{"model":"fast","stream":%v}`, stream)))
		if err != nil {
			t.Error(err)
			close(ch)
			return
		}
		ch <- resp
	}()
	return ch
}

func awaitResponse(t testing.TB, ch chan *http.Response) *http.Response {
	t.Helper()
	select {
	case resp := <-ch:
		if resp == nil {
			t.FailNow()
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	case <-time.After(10 * time.Second):
		t.Fatal("no response headers")
		return nil
	}
}

func TestLoadingProgressThenStream(t *testing.T) {
	srv, fe := loadingRouter(t, sseUpstream(t, 200).URL, true)
	outcome := slowLoad(fe)
	resp := awaitResponse(t, startStream(t, srv.URL, true)) // headers arrive while still loading
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("%d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	br := bufio.NewReader(resp.Body)
	for i := 0; i < 2; i++ {
		if ev := testbed.ReadSSEEvent(t, br); !strings.HasPrefix(ev, ": loading model m1") {
			t.Fatalf("comment %d: %q", i, ev)
		}
	}
	outcome <- nil
	rest, err := io.ReadAll(br)
	if err != nil {
		t.Fatal(err)
	}
	// Loading comments may still precede the upstream body, never follow it.
	body := string(rest)
	for strings.HasPrefix(body, ": loading model m1") {
		_, body, _ = strings.Cut(body, "\n\n")
	}
	if body != "data: hello\n\ndata: [DONE]\n\n" {
		t.Fatalf("body after loading: %q", rest)
	}
	if resp.Header.Get("X-Upstream") != "" {
		t.Fatal("upstream headers after early headers")
	}
	waitReleased(t, fe, 1)
}

func TestLoadingProgressThenFailure(t *testing.T) {
	srv, fe := loadingRouter(t, sseUpstream(t, 200).URL, true)
	outcome := slowLoad(fe)
	resp := awaitResponse(t, startStream(t, srv.URL, true))
	br := bufio.NewReader(resp.Body)
	testbed.ReadSSEEvent(t, br)
	code := 1
	outcome <- &engine.LoadError{Model: "m1", Reason: "exited", ExitCode: &code, LogTail: []string{"error: out of memory"}}
	rest, err := io.ReadAll(br)
	if err != nil {
		t.Fatalf("stream did not end cleanly: %v", err)
	}
	_, ev, ok := strings.Cut(string(rest), "data: ")
	if !ok || !strings.HasSuffix(ev, "\n\n") {
		t.Fatalf("no error event in %q", rest)
	}
	var doc struct {
		Error struct{ Message, Type, Code string }
	}
	if err := json.Unmarshal([]byte(ev), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Error.Code != "model_load_failed" || !strings.Contains(doc.Error.Message, "out of memory") {
		t.Fatalf("%+v", doc)
	}
	if fe.active("m1") != 0 {
		t.Fatal("lease held")
	}
}

func TestLoadingProgressThenUpstreamError(t *testing.T) {
	srv, fe := loadingRouter(t, sseUpstream(t, 400).URL, true)
	outcome := slowLoad(fe)
	resp := awaitResponse(t, startStream(t, srv.URL, true))
	br := bufio.NewReader(resp.Body)
	testbed.ReadSSEEvent(t, br)
	outcome <- nil
	rest, _ := io.ReadAll(br)
	if !strings.HasSuffix(string(rest), "data: {\"error\":{\"code\":400,\"message\":\"context too long\",\"type\":\"invalid_request_error\"}}\n\n") {
		t.Fatalf("%q", rest)
	}
	waitReleased(t, fe, 1)
}

// The upstream's own status and headers pass through when nothing was sent early: a request that is
// not streaming, or streaming with progress off, simply waits.
func TestLoadingWithoutEarlyHeaders(t *testing.T) {
	for _, tc := range []struct {
		name             string
		progress, stream bool
	}{{"not streaming", true, false}, {"progress off", false, true}} {
		t.Run(tc.name, func(t *testing.T) {
			srv, fe := loadingRouter(t, sseUpstream(t, 400).URL, tc.progress)
			fe.mu.Lock()
			fe.acquire = func(ctx context.Context, id string) (*engine.Lease, error) {
				time.Sleep(100 * time.Millisecond) // the fake model loads for 5× loadingAfter
				return fe.lease(id, 100*time.Millisecond), nil
			}
			fe.mu.Unlock()
			resp := awaitResponse(t, startStream(t, srv.URL, tc.stream))
			if resp.StatusCode != 400 || resp.Header.Get("X-Upstream") != "yes" {
				t.Fatalf("%d %v", resp.StatusCode, resp.Header)
			}
			waitReleased(t, fe, 1)
		})
	}
}

func TestLoadingClientLeaves(t *testing.T) {
	srv, fe := loadingRouter(t, sseUpstream(t, 200).URL, true)
	left := make(chan struct{})
	fe.mu.Lock()
	fe.acquire = func(ctx context.Context, id string) (*engine.Lease, error) {
		<-ctx.Done()
		close(left)
		return nil, ctx.Err()
	}
	fe.mu.Unlock()
	resp := awaitResponse(t, startStream(t, srv.URL, true))
	testbed.ReadSSEEvent(t, bufio.NewReader(resp.Body))
	resp.Body.Close()
	select {
	case <-left:
	case <-time.After(10 * time.Second):
		t.Fatal("Acquire not cancelled when the client left")
	}
}

// tryingEngine is the fake engine with engine.Engine's TryAcquireID: answer says whether a request
// is answered at once (a loaded model).
type tryingEngine struct {
	*fakeEngine
	answer bool
	tries  atomic.Int32
}

func (e *tryingEngine) TryAcquireID(id string) (*engine.Lease, bool, error) {
	e.tries.Add(1)
	if !e.answer {
		return nil, false, nil
	}
	return e.lease(id, 0), true, nil
}

// A stream for a model that takes a lease at once is answered without loading comments, and
// without waiting for Acquire; one whose request would wait gets them, from Acquire's wait, as
// before.
func TestLoadingProgressOnlyWhenTheRequestWaits(t *testing.T) {
	for _, answer := range []bool{true, false} {
		up := sseUpstream(t, 200)
		var te *tryingEngine
		srv, fe, _ := testRouter(t, up.URL, func(o *Options) {
			o.StreamLoadingProgress = true
			te = &tryingEngine{fakeEngine: o.Engine.(*fakeEngine), answer: answer}
			o.Engine = te
		}, func(server *Server) {
			server.loadingAfter = 20 * time.Millisecond
			server.loadingEvery = 20 * time.Millisecond
		})
		<-fe.subscribed
		outcome := slowLoad(fe) // Acquire waits until told: only a request that waits reaches it
		resp := awaitResponse(t, startStream(t, srv.URL, true))
		br := bufio.NewReader(resp.Body)
		if !answer {
			if ev := testbed.ReadSSEEvent(t, br); !strings.HasPrefix(ev, ": loading model m1") {
				t.Fatalf("a waiting request's first event: %q", ev)
			}
			outcome <- nil
		}
		rest, err := io.ReadAll(br)
		if err != nil {
			t.Fatal(err)
		}
		body := string(rest)
		for !answer && strings.HasPrefix(body, ": loading model m1") {
			_, body, _ = strings.Cut(body, "\n\n")
		}
		if body != "data: hello\n\ndata: [DONE]\n\n" || te.tries.Load() != 1 {
			t.Fatalf("answered at once %v: body %q after %d tries", answer, rest, te.tries.Load())
		}
		waitReleased(t, fe, 1)
	}
}
