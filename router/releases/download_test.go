package releases

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/testbed/ghreleases"
)

// The tests of hostile releases whose downloads lie about their size or stall (see hostile_test.go).

// (8) An asset listed with no size (0 or negative) is refused before it is downloaded.
func TestUnlistedSizeRefused(t *testing.T) {
	h := newHostile(t)
	_, tgz := fakeArchives(t)
	for _, size := range []int64{0, -1} {
		tag := fmt.Sprintf("b72%02d", -size)
		name := ghreleases.AssetName(tag, ".tar.gz")
		h.s.Add(tag, map[string][]byte{name: tgz})
		h.s.SetSize(tag, name, size)
		n := h.s.Downloads()
		err := h.refused(t, Request{})
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("lists its size as %d bytes", size)) {
			t.Errorf("size %d: err = %v", size, err)
		}
		if h.s.Downloads() != n {
			t.Errorf("size %d: downloaded", size)
		}
	}
}

// (8) A download larger than the release lists is refused: at once when the answer's Content-Length
// says so, else as soon as one byte more than listed came.
func TestMoreThanListedRefused(t *testing.T) {
	for _, chunked := range []bool{false, true} {
		t.Run(fmt.Sprint("chunked=", chunked), func(t *testing.T) {
			h := newHostile(t)
			h.s.Chunked.Store(chunked)
			_, tgz := fakeArchives(t)
			name := ghreleases.AssetName("b7200", ".tar.gz")
			h.s.Add("b7200", map[string][]byte{name: tgz})
			h.s.SetSize("b7200", name, 190)
			err := h.refused(t, Request{})
			want := "more than the 190 B listed; nothing of it was kept"
			if chunked {
				want = "more than the 190 B listed came"
			}
			wantErr(t, err, ErrTooLarge, want)
		})
	}
}

// (8) A download that stalls (before its headers, or after some bytes) is cut after StallTimeout,
// and the install lock is free again.
func TestStalledDownloadCut(t *testing.T) {
	for _, headers := range []bool{false, true} {
		t.Run(fmt.Sprint("headers=", headers), func(t *testing.T) {
			h := newHostile(t)
			setStall(h.in, 300*time.Millisecond)
			if headers {
				h.s.StallHeaders.Store(true)
			} else {
				h.s.StallAt.Store(1000)
			}
			_, tgz := fakeArchives(t)
			h.s.Add("b7200", map[string][]byte{ghreleases.AssetName("b7200", ".tar.gz"): tgz})
			done := make(chan error, 1)
			go func() {
				_, err := h.in.Install(context.Background(), Request{}, nil)
				done <- err
			}()
			var err error
			select {
			case err = <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("the stalled install still runs after 20 s")
			}
			t.Logf("refused: %v", err)
			h.check(t)
			after := "after 1000 B of"
			if headers {
				after = "after 0 B of"
			}
			wantErr(t, err, ErrCut, "no data for 300ms "+after)
			if _, err := h.in.Use("b7100"); err != nil {
				t.Errorf("use after the stall: %v", err)
			}
		})
	}
}
