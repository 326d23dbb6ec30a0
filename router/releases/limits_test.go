package releases

import (
	"errors"
	"strings"
	"testing"

	"github.com/llamatray/llamatray/router/testbed/ghreleases"
)

// The tests of hostile releases whose archives unpack to too much (see hostile_test.go).

// fakeSize is what fakeEntries unpack to.
func fakeSize(t *testing.T) int64 {
	var n int64
	for _, e := range fakeEntries(t) {
		n += int64(len(e.Data)) + entryCost
	}
	return n + entryCost // the folder
}

// (11) A .zip whose files come to more than the limit is refused from its central directory, before
// anything is unpacked.
func TestZipBombRefused(t *testing.T) {
	h := newHostile(t)
	setMaxUnpacked(h.in, fakeSize(t)+4<<20)
	h.publish(t, "b7200", ".zip", append(fakeEntries(t), ghreleases.Bomb("llama-b7200/zeros", 8<<20)))
	err := h.refused(t, Request{})
	wantErr(t, err, ErrTooLarge, "it unpacks to", "MiB, more than", "the most an archive may unpack to")
}

// (11) A .tar.gz declares nothing up front: its bytes are counted as they are written, and the unpack
// stops at the limit.
func TestTarBombStopped(t *testing.T) {
	h := newHostile(t)
	setMaxUnpacked(h.in, fakeSize(t)+4<<20)
	h.publish(t, "b7200", ".tar.gz", append(fakeEntries(t), ghreleases.Bomb("llama-b7200/zeros", 8<<20)))
	err := h.refused(t, Request{})
	wantErr(t, err, ErrTooLarge, "it unpacks to more than", "the most an archive may unpack to")
}

// (11) With the default limits a small archive may unpack to 64 MiB at most (200 times its size
// being less).
func TestUnpackRatioRefused(t *testing.T) {
	h := newHostile(t)
	lie := ghreleases.Entry{Name: "zeros", Mode: 0o644, Data: []byte("x"), Declared: 1 << 30}
	h.publish(t, "b7200", ".zip", []ghreleases.Entry{lie})
	err := h.refused(t, Request{})
	wantErr(t, err, ErrTooLarge, "1.0 GiB, more than 64 MiB", "200 times the archive's")
}

// (11) An archive may not fill the disk: the unpack keeps 256 MiB free, and says so as a full disk.
func TestUnpackKeepsFreeSpace(t *testing.T) {
	for _, ext := range []string{".zip", ".tar.gz"} {
		t.Run(ext, func(t *testing.T) {
			h := newHostile(t)
			setFree(h.in, diskMargin+fakeSize(t)+2<<20)
			h.publish(t, "b7200", ext, append(fakeEntries(t), ghreleases.Bomb("llama-b7200/zeros", 8<<20)))
			err := h.refused(t, Request{})
			wantErr(t, err, ErrDiskFull, "less 256 MiB kept free")
		})
	}
}

// (11) A .zip that declares less than its entries hold: archive/zip stops reading at the declared
// size, and the bytes written are counted besides.
func TestZipLyingSizesRefused(t *testing.T) {
	h := newHostile(t)
	setMaxUnpacked(h.in, fakeSize(t)+4<<20)
	bomb := ghreleases.Bomb("llama-b7200/zeros", 8<<20)
	bomb.Declared = 1 << 10
	h.publish(t, "b7200", ".zip", append(fakeEntries(t), bomb))
	err := h.refused(t, Request{})
	if err == nil || !strings.Contains(err.Error(), "llama-b7200/zeros holds more than the 1.0 KiB the archive declares") && !errors.Is(err, ErrTooLarge) {
		t.Errorf("err = %v", err)
	}
}
