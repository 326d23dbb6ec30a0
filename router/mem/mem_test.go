package mem

import (
	"context"
	"os"
	"reflect"
	"testing"
)

func TestParseGPUs(t *testing.T) {
	in := []byte("NVIDIA GeForce RTX 4090, 24564, 23012\nbad line\nTesla T4, 15360, x\n")
	want := []GPU{{Name: "NVIDIA GeForce RTX 4090", Total: 24564 << 20, Free: 23012 << 20}}
	if got := ParseGPUs(in); !reflect.DeepEqual(got, want) {
		t.Fatalf("ParseGPUs = %+v, want %+v", got, want)
	}
}

func TestParseComputeApps(t *testing.T) {
	in := []byte("1234, 5120\n1234, 100\n99, 7\n[N/A]\n")
	want := map[int]int64{1234: 5220 << 20, 99: 7 << 20}
	if got := ParseComputeApps(in); !reflect.DeepEqual(got, want) {
		t.Fatalf("ParseComputeApps = %v, want %v", got, want)
	}
}

func TestMachine(t *testing.T) {
	p := Machine()
	s, err := p.System(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if s.Total <= 0 || s.Available <= 0 || s.Available > s.Total {
		t.Fatalf("implausible system memory %+v", s)
	}
	rss, err := p.ProcessRSS(context.Background(), os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if rss <= 1<<20 {
		t.Fatalf("own RSS %d is implausibly small", rss)
	}
	if _, err := p.ProcessRSS(context.Background(), 1<<30); err == nil {
		t.Fatal("RSS of a process that does not exist should fail")
	}
}
