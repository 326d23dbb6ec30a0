package httpapi

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// BenchmarkProxy compares a small chat completion sent through the router with the same request sent
// straight to the upstream, at 1 and 8 concurrent clients. The difference is the router's overhead:
// body read and model scan, lease, request ID, reverse proxy hop. cpu-µs/op is the process's CPU time
// per request (client, router and upstream alike), steadier than ns/op on a busy machine.
func BenchmarkProxy(b *testing.B) {
	reply := []byte(`{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hello"}}]}`)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(reply)
	}))
	defer up.Close()
	srv, _, _ := testRouter(b, up.URL, nil)
	body := `{"model":"fast","messages":[{"role":"user","content":"` + strings.Repeat("hi ", 100) + `"}]}`
	for _, target := range []struct{ name, url string }{{"direct", up.URL}, {"router", srv.URL}} {
		for _, c := range []int{1, 8} {
			b.Run(fmt.Sprintf("%s/c=%d", target.name, c), func(b *testing.B) {
				client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
				defer client.CloseIdleConnections()
				b.SetBytes(int64(len(body)))
				b.ResetTimer()
				cpu0, cpuOK := processCPU()
				var wg sync.WaitGroup
				per := b.N / c
				for w := 0; w < c; w++ {
					n := per
					if w == 0 {
						n += b.N % c
					}
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := 0; i < n; i++ {
							resp, err := client.Post(target.url+"/v1/chat/completions", "application/json", strings.NewReader(body))
							if err != nil {
								b.Error(err)
								return
							}
							_, _ = io.Copy(io.Discard, resp.Body)
							resp.Body.Close()
							if resp.StatusCode != 200 {
								b.Errorf("status %d", resp.StatusCode)
								return
							}
						}
					}()
				}
				wg.Wait()
				if cpu1, ok := processCPU(); ok && cpuOK {
					b.ReportMetric(float64(cpu1-cpu0)/float64(time.Microsecond)/float64(b.N), "cpu-µs/op")
				}
			})
		}
	}
}
