package download

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// server serves body; cutAt > 0 makes the first answer stop (connection closed) after that many
// bytes; ignoreRange sends the whole body whatever the Range; chunked sends no Content-Length;
// stallHeaders holds the first answer's headers until the client goes away.
type server struct {
	body         []byte
	cutAt        int
	ignoreRange  bool
	chunked      bool
	stallHeaders bool
	status       int
	arrived      chan struct{} // if not nil, closed when the first request arrives
	requests     atomic.Int32
	ranges       atomic.Int32
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := s.requests.Add(1)
	if n == 1 && s.arrived != nil {
		close(s.arrived)
	}
	if s.status != 0 {
		http.Error(w, "nope", s.status)
		return
	}
	if s.stallHeaders && n == 1 {
		<-r.Context().Done()
		return
	}
	from := 0
	if rg := r.Header.Get("Range"); rg != "" && !s.ignoreRange {
		s.ranges.Add(1)
		from, _ = strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(rg, "bytes="), "-"))
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", from, len(s.body)-1, len(s.body)))
	}
	part := s.body[from:]
	if !s.chunked {
		w.Header().Set("Content-Length", strconv.Itoa(len(part)))
	}
	if from > 0 {
		w.WriteHeader(http.StatusPartialContent)
	}
	if s.cutAt > 0 && n == 1 {
		w.Write(part[:s.cutAt])
		w.(http.Flusher).Flush()
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
		return
	}
	w.Write(part)
}

func source(t *testing.T, s *server, size int64) Source {
	t.Helper()
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return Source{
		Request: func(ctx context.Context) (*http.Request, error) {
			return http.NewRequestWithContext(ctx, http.MethodGet, ts.URL+"/file", nil)
		},
		Size:     size,
		Stall:    2 * time.Second,
		Attempts: 10,
		Backoff:  time.Millisecond,
	}
}

func body(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i * 7)
	}
	return b
}

func TestFill(t *testing.T) {
	data := body(300_000)
	for _, tc := range []struct {
		name     string
		s        *server
		requests int32
		ranges   int32
	}{
		{"whole", &server{}, 1, 0},
		{"cut, resumed with a range", &server{cutAt: 100_000}, 2, 1},
		{"cut, range ignored: what is here is skipped", &server{cutAt: 100_000, ignoreRange: true}, 2, 0},
		{"chunked", &server{chunked: true}, 1, 0},
		{"headers stall once, then come", &server{stallHeaders: true}, 2, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.s.body = data
			src := source(t, tc.s, int64(len(data)))
			if tc.s.stallHeaders {
				src.Stall = 200 * time.Millisecond
			}
			var out bytes.Buffer
			var counted int64
			n, err := Fill(context.Background(), src, &out, 0, func(k int64) { counted += k })
			if err != nil {
				t.Fatal(err)
			}
			if n != int64(len(data)) || counted != n || !bytes.Equal(out.Bytes(), data) {
				t.Fatalf("wrote %d, counted %d, equal %v", n, counted, bytes.Equal(out.Bytes(), data))
			}
			if tc.s.requests.Load() != tc.requests || tc.s.ranges.Load() != tc.ranges {
				t.Errorf("%d requests, %d with a range; want %d, %d", tc.s.requests.Load(), tc.s.ranges.Load(), tc.requests, tc.ranges)
			}
		})
	}
}

// A file partly here already (a partial from an earlier run) is completed from where it stops.
func TestFillFromOffset(t *testing.T) {
	data := body(50_000)
	s := &server{body: data}
	var out bytes.Buffer
	out.Write(data[:20_000])
	n, err := Fill(context.Background(), source(t, s, int64(len(data))), &out, 20_000, nil)
	if err != nil || n != 30_000 || !bytes.Equal(out.Bytes(), data) || s.ranges.Load() != 1 {
		t.Fatalf("n %d, err %v, equal %v, ranges %d", n, err, bytes.Equal(out.Bytes(), data), s.ranges.Load())
	}
}

func TestFillRefuses(t *testing.T) {
	data := body(10_000)
	for _, tc := range []struct {
		name     string
		s        *server
		size     int64
		attempts int
		is       error
		says     string
		requests int32
	}{
		{"more than listed, said by Content-Length", &server{}, 5_000, 10, ErrTooLarge, "the server sends 9.8 KiB, more than the 4.9 KiB listed", 1},
		{"more than listed, found while reading", &server{chunked: true}, 5_000, 10, ErrTooLarge, "more than the 4.9 KiB listed came", 1},
		{"refused by the server: no retry", &server{status: 404}, 10_000, 10, nil, "refused: 404", 1},
		{"cut without retries", &server{cutAt: 4_000}, 10_000, 1, ErrCut, "stopped after 3.9 KiB of 9.8 KiB", 1},
		{"unknown size", &server{}, 0, 10, nil, "refusing a download of unknown size", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.s.body = data
			src := source(t, tc.s, tc.size)
			src.Attempts = tc.attempts
			src.Refuse = func(resp *http.Response) error { return fmt.Errorf("refused: %d", resp.StatusCode) }
			var out bytes.Buffer
			_, err := Fill(context.Background(), src, &out, 0, nil)
			if err == nil || tc.is != nil && !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("err = %v, want %v saying %q", err, tc.is, tc.says)
			}
			if int64(out.Len()) > max(tc.size, 0) {
				t.Errorf("%d bytes written, more than the %d listed", out.Len(), tc.size)
			}
			if got := tc.s.requests.Load(); got != tc.requests {
				t.Errorf("%d requests, want %d", got, tc.requests)
			}
		})
	}
}

// A server that keeps stalling: each attempt is cut after the stall timeout, and after MaxStalls
// attempts in a row that brought nothing the download gives up, matching ErrCut.
func TestFillGivesUpAfterStalls(t *testing.T) {
	s := &server{body: body(1000)}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		<-r.Context().Done()
	}))
	defer ts.Close()
	src := Source{
		Request: func(ctx context.Context) (*http.Request, error) {
			return http.NewRequestWithContext(ctx, http.MethodGet, ts.URL, nil)
		},
		Size: 1000, Stall: 50 * time.Millisecond, Attempts: 100, MaxStalls: 3, Backoff: time.Millisecond,
	}
	_, err := Fill(context.Background(), src, &bytes.Buffer{}, 0, nil)
	var gu *GaveUpError
	var se *StallError
	if !errors.As(err, &gu) || gu.Tries != 3 || !errors.Is(err, ErrCut) || !errors.As(err, &se) || !strings.Contains(err.Error(), "no data for 50ms after 0 B of 1000 B") {
		t.Fatalf("err = %v", err)
	}
	if s.requests.Load() != 3 {
		t.Errorf("%d requests, want 3", s.requests.Load())
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk on fire") }

// A write that fails is the caller's problem: no retry.
func TestFillWriteErrorNotRetried(t *testing.T) {
	s := &server{body: body(1000)}
	_, err := Fill(context.Background(), source(t, s, 1000), failingWriter{}, 0, nil)
	if err == nil || !strings.Contains(err.Error(), "disk on fire") || s.requests.Load() != 1 {
		t.Fatalf("err = %v after %d requests", err, s.requests.Load())
	}
}

func TestFillCancelled(t *testing.T) {
	s := &server{stallHeaders: true, body: body(1000), arrived: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := Fill(ctx, source(t, s, 1000), &bytes.Buffer{}, 0, nil)
		errc <- err
	}()
	<-s.arrived
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}

func TestSpeed(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var s Speed
	for _, tc := range []struct {
		at          time.Duration
		done, total int64
		rate        float64
		left        time.Duration
	}{
		{0, 0, 1000, 0, 0},
		{time.Second, 100, 1000, 100, 9 * time.Second},
		{2 * time.Second, 300, 1000, 150, 4666666666},
		{10 * time.Second, 300, 1000, 0, 0}, // nothing for 8 s: the window forgot the bytes
		{11 * time.Second, 1000, 1000, 700, 0},
	} {
		rate, left := s.At(t0.Add(tc.at), tc.done, tc.total)
		if rate < tc.rate-0.01 || rate > tc.rate+0.01 || left != tc.left {
			t.Errorf("at %s: rate %.2f left %s, want %.2f %s", tc.at, rate, left, tc.rate, tc.left)
		}
	}
}

// A resumed download's rate counts what comes over the network, not the part found on disk, even
// when the part is counted after the first reading (hashing a large partial file takes seconds).
func TestSpeedAfterResume(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var s Speed
	s.At(t0, 0, 10_000)
	s.Found(8_000) // the partial file, hashed
	rate, left := s.At(t0.Add(time.Second), 8_100, 10_000)
	if rate != 100 || left != 19*time.Second {
		t.Fatalf("a second after resuming with 8000 bytes on disk and 100 new: rate %.0f, left %s; want 100, 19s", rate, left)
	}
}

func TestCheckSpace(t *testing.T) {
	dir := t.TempDir()
	err := CheckSpace(dir+"/not/yet/made", 1<<62)
	var se *SpaceError
	if !errors.As(err, &se) || !errors.Is(err, ErrDiskFull) || !strings.Contains(err.Error(), "needed") {
		t.Fatalf("err = %v", err)
	}
	if err := CheckSpace(dir, 1); err != nil {
		t.Fatal(err)
	}
}
