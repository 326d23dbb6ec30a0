package app

import (
	"sync"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/testbed"
	"github.com/llamatray/llamatray/router/wire"
)

// discoveringBackend is the fake with other Llamatrays found on the network.
type discoveringBackend struct {
	*fakeBackend
	mu    sync.Mutex // guards found
	found []wire.Discovered
}

func (d *discoveringBackend) Discovered() []wire.Discovered {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]wire.Discovered(nil), d.found...)
}

// Found on this network lists each instance found under the peers; Add asks for its key and adds
// it as a peer through the configuration; nothing is added before.
func TestDiscoveredPart(t *testing.T) {
	fb := newFakeBackend(windowSnapshot())
	fb.cfg.Peers = map[string]config.Peer{}
	db := &discoveringBackend{fakeBackend: fb, found: []wire.Discovered{
		{Name: "studio", Instance: "studio", URL: "http://10.0.0.7:8080", Version: "v1.2.0"},
		{Name: "laptop", Instance: "laptop", URL: "http://10.0.0.8:8080"},
	}}
	u, l := newTestUIWith(t, db)
	l.wait(func() {
		u.models = newModelsWindow(u)
		u.models.show()
		u.models.win.Resize(fyne.NewSize(1000, 700))
		u.models.update(u.snap)
	})
	var box *fyne.Container
	l.wait(func() { box = u.models.machines.box })
	for _, want := range []string{"Found on this network", "studio — http://10.0.0.7:8080 (Llamatray v1.2.0)", "laptop — http://10.0.0.8:8080"} {
		var ok bool
		l.wait(func() { ok = hasText(box, want) })
		if !ok {
			var got []string
			l.wait(func() { got = texts(box) })
			t.Fatalf("no %q in %q", want, got)
		}
	}
	if len(fb.Config().Peers) != 0 {
		t.Fatal("a peer was added before any Add")
	}
	// Add studio: the form asks for its key.
	l.wait(func() {
		for _, o := range test.LaidOutObjects(box) {
			if b, ok := o.(*widget.Button); ok && b.Text == "Add" {
				test.Tap(b) // the first: studio
				break
			}
		}
	})
	l.wait(func() {
		top := u.models.win.Canvas().Overlays().Top()
		if top == nil {
			t.Fatal("no form after Add")
		}
		var key *widget.Entry
		var add *widget.Button
		for _, o := range test.LaidOutObjects(top) {
			switch w := o.(type) {
			case *widget.Entry:
				if w.Password {
					key = w
				}
			case *widget.Button:
				if w.Text == "Add" {
					add = w
				}
			}
		}
		if key == nil || add == nil {
			t.Fatalf("form without a key entry or Add: %q", texts(top))
		}
		key.SetText("secret")
		test.Tap(add)
	})
	testbed.WaitFor(t, 10*time.Second, "studio added as a peer", func() bool {
		p, ok := fb.Config().Peers["studio"]
		return ok && p.URL == "http://10.0.0.7:8080" && p.APIKey == "secret"
	})
	// Found again as a configured peer, the service no longer offers it: the row goes.
	db.mu.Lock()
	db.found = db.found[1:]
	db.mu.Unlock()
	l.wait(func() { u.models.update(u.snap) })
	l.wait(func() {
		if hasText(box, "studio —") || !hasText(box, "laptop —") {
			t.Errorf("after Add: %q", texts(box))
		}
	})
}

func TestDiscoveredAdd(t *testing.T) {
	d := wire.Discovered{Name: "studio", URL: "http://10.0.0.7:8080"}
	if got := discoveredAdd(d, "  ", " k "); got != (wire.PeerAdd{Name: "studio", URL: "http://10.0.0.7:8080", APIKey: "k"}) {
		t.Errorf("blank name: %+v", got)
	}
	if got := discoveredAdd(d, "box", ""); got.Name != "box" || got.APIKey != "" {
		t.Errorf("named: %+v", got)
	}
}
