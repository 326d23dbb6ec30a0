package catalog

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/testbed/ggufwrite"
)

// waitSignal waits for one signal on ch, failing after a generous deadline.
func waitSignal(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(20 * time.Second):
		t.Fatalf("no catalog signal after %s", what)
	}
}

func TestWatchAddRemove(t *testing.T) {
	root := t.TempDir()
	writeModel(t, filepath.Join(root, "first.gguf"), ggufwrite.HeaderOptions{})
	c, _ := newCatalog(t, Options{Dirs: []string{root}})
	ch, unsubscribe := c.Subscribe()
	defer unsubscribe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Watch(ctx, 10*time.Millisecond)
	}()
	defer func() {
		cancel()
		<-done
	}()

	added := filepath.Join(root, "sub", "second.gguf")
	writeModel(t, added, ggufwrite.HeaderOptions{})
	waitSignal(t, ch, "adding a file")
	if got := ids(c.Models()); !reflect.DeepEqual(got, []string{"first", "second"}) {
		t.Fatalf("after add: %v", got)
	}

	if err := os.Remove(filepath.Join(root, "first.gguf")); err != nil {
		t.Fatal(err)
	}
	waitSignal(t, ch, "removing a file")
	if got := ids(c.Models()); !reflect.DeepEqual(got, []string{"second"}) {
		t.Fatalf("after remove: %v", got)
	}
}

func TestSubscribeCoalescesAndStops(t *testing.T) {
	root := t.TempDir()
	c, _ := newCatalog(t, Options{Dirs: []string{root}})
	ch, unsubscribe := c.Subscribe()
	other, unsubscribeOther := c.Subscribe()
	defer unsubscribeOther()

	// A scan that changes nothing sends nothing.
	if err := c.Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
		t.Fatal("signal without a change")
	default:
	}

	for i := range 3 {
		writeModel(t, filepath.Join(root, fmt.Sprintf("m%d.gguf", i)), ggufwrite.HeaderOptions{})
		if err := c.Scan(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	<-ch // three changes, one pending signal
	select {
	case <-ch:
		t.Fatal("signals were not coalesced")
	default:
	}

	unsubscribe()
	unsubscribe() // idempotent
	<-other
	writeModel(t, filepath.Join(root, "late.gguf"), ggufwrite.HeaderOptions{})
	if err := c.Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitSignal(t, other, "a change")
	select {
	case <-ch:
		t.Fatal("signal after unsubscribe")
	default:
	}
}

func TestChangedSeesEdits(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, "m.gguf")
	writeModel(t, p, ggufwrite.HeaderOptions{})
	c, lb := newCatalog(t, Options{Dirs: []string{root}})
	ctx := context.Background()
	if c.Changed(ctx) {
		t.Fatal("Changed right after a scan")
	}
	if n := lb.count("read model header"); n != 1 {
		t.Fatalf("%d header reads, want 1", n)
	}
	// An unchanged file is not read again.
	if err := c.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	if n := lb.count("read model header"); n != 1 {
		t.Errorf("rescan read %d headers, want 0 new", n-1)
	}
	// A touched file is.
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(p, later, later); err != nil {
		t.Fatal(err)
	}
	if !c.Changed(ctx) {
		t.Fatal("Changed missed a new modification time")
	}
	if err := c.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	if n := lb.count("read model header"); n != 2 {
		t.Errorf("%d header reads, want 2", n)
	}
	if m, _ := c.Lookup("m"); !m.ModTime.Equal(later.Truncate(time.Microsecond)) && !m.ModTime.Equal(later) {
		t.Errorf("ModTime %v, want %v", m.ModTime, later)
	}
}

func TestScanCancelledKeepsCatalog(t *testing.T) {
	root := t.TempDir()
	writeModel(t, filepath.Join(root, "m.gguf"), ggufwrite.HeaderOptions{})
	c, _ := newCatalog(t, Options{Dirs: []string{root}})
	writeModel(t, filepath.Join(root, "n.gguf"), ggufwrite.HeaderOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Scan(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Scan = %v, want context.Canceled", err)
	}
	if got := ids(c.Models()); !reflect.DeepEqual(got, []string{"m"}) {
		t.Errorf("after a cancelled scan: %v", got)
	}
}

func TestSetDirs(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	writeModel(t, filepath.Join(a, "in-a.gguf"), ggufwrite.HeaderOptions{})
	writeModel(t, filepath.Join(b, "in-b.gguf"), ggufwrite.HeaderOptions{})
	c, _ := newCatalog(t, Options{Dirs: []string{a}})
	ch, unsubscribe := c.Subscribe()
	defer unsubscribe()
	c.SetDirs([]string{b, " ", b})
	if got := ids(c.Models()); !reflect.DeepEqual(got, []string{"in-b"}) {
		t.Errorf("after SetDirs: %v", got)
	}
	if !reflect.DeepEqual(c.Dirs(), []string{b}) {
		t.Errorf("Dirs = %v", c.Dirs())
	}
	waitSignal(t, ch, "SetDirs")
}

// TestConcurrentReadsDuringScans reads the catalog from several goroutines while scans replace
// it; run with -race.
func TestConcurrentReadsDuringScans(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	for i := range 20 {
		writeModel(t, filepath.Join(a, fmt.Sprintf("a%02d.gguf", i)), ggufwrite.HeaderOptions{})
		writeModel(t, filepath.Join(b, fmt.Sprintf("b%02d.gguf", i)), ggufwrite.HeaderOptions{})
	}
	c, _ := newCatalog(t, Options{Dirs: []string{a}, Aliases: func(id string) []string { return []string{"alias-" + id} }})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var found sync.Map
	for r := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				name := fmt.Sprintf("a%02d", i%20)
				if r%2 == 1 {
					name = fmt.Sprintf("alias-b%02d", i%20)
				}
				if m, ok := c.Lookup(name); ok {
					found.Store(m.ID, true)
					m.Files[0] = "scribble" // copies may be changed freely
				}
				for _, m := range c.Models() {
					m.Aliases = append(m.Aliases[:0], "x")
				}
				c.Suggest("a1", 3)
				c.Warnings()
			}
		}()
	}
	// Keep changing folders while the readers run, until they have seen both sets (a loaded machine
	// may not schedule them during the first few changes).
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; ; i++ {
		dirs := []string{a}
		if i%2 == 0 {
			dirs = []string{b, a}
		}
		c.SetDirs(dirs)
		_, okA := found.Load("a00")
		_, okB := found.Load("b00")
		if i >= 6 && okA && okB || time.Now().After(deadline) {
			break
		}
	}
	wg.Add(1)
	go func() { // a concurrent Scan next to SetDirs
		defer wg.Done()
		if err := c.Scan(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	c.SetDirs([]string{b})
	cancel()
	wg.Wait()
	if _, ok := found.Load("a00"); !ok {
		t.Error("Lookup never found a00")
	}
	if _, ok := found.Load("b00"); !ok {
		t.Error("Lookup never found b00 by alias")
	}
	for _, m := range c.Models() {
		if m.Files[0] == "scribble" || len(m.Aliases) != 1 || m.Aliases[0] != "alias-"+m.ID {
			t.Fatalf("a reader's change leaked into the catalog: %+v", m)
		}
	}
}
