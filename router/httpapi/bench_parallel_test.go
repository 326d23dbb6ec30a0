//go:build unix

package httpapi

import (
	"bufio"
	"net"
	"net/http"
	"sync"
	"syscall"
	"testing"
)

// BenchmarkRouterFrontParallel is BenchmarkRouterFront with eight clients at once, as the bench's
// c=8 cells, and reports cpu-ns/op: the process's CPU time (user and system) per request. The
// client and the upstream are in the process too, and cost the same from one build to the next,
// so two builds compare by it where wall time (mostly waiting) cannot tell them apart.
func BenchmarkRouterFrontParallel(b *testing.B) {
	const clients = 8
	addr, req := routerFrontSetup(b)
	conns := make([]*bufio.ReadWriter, clients)
	for i := range conns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = c.Close() })
		conns[i] = bufio.NewReadWriter(bufio.NewReaderSize(c, 8192), bufio.NewWriter(c))
	}
	send := func(rw *bufio.ReadWriter, n int) error {
		for range n {
			_, _ = rw.Write(req)
			if err := rw.Flush(); err != nil {
				return err
			}
			if status, err := benchReadAnswer(rw.Reader); err != nil || status != http.StatusOK {
				return fmtAnswerErr(status, err)
			}
		}
		return nil
	}
	run := func(each int) {
		var wg sync.WaitGroup
		errs := make(chan error, clients)
		for _, rw := range conns {
			wg.Go(func() {
				if err := send(rw, each); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
	}
	run(20) // warm: the upstream connections and every pool
	each := max(b.N/clients, 1)
	b.ReportAllocs()
	var r0, r1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &r0)
	b.ResetTimer()
	run(each)
	b.StopTimer()
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &r1)
	cpu := r1.Utime.Nano() + r1.Stime.Nano() - r0.Utime.Nano() - r0.Stime.Nano()
	b.ReportMetric(float64(cpu)/float64(each*clients), "cpu-ns/op")
}
