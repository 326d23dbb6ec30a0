package app

import (
	"errors"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/testbed"
	"github.com/llamatray/llamatray/router/wire"
)

func (f *fakeBackend) AddPeer(p wire.PeerAdd) error {
	if p.Name == "" {
		return errors.New("the fake needs a name")
	}
	return f.EditConfig(func(c *config.Config) error {
		c.Peers[p.Name] = config.Peer{URL: p.URL, APIKey: p.APIKey}
		return nil
	})
}

func (f *fakeBackend) RemovePeer(name string) error {
	return f.EditConfig(func(c *config.Config) error {
		delete(c.Peers, name)
		return nil
	})
}

// The Other machines section lists each peer with its state and models, shows a peer that does
// not answer with why and its models unavailable, and Remove takes one out through the config.
func TestMachinesSection(t *testing.T) {
	s := windowSnapshot()
	s.Peers = []wire.Peer{
		{Name: "desk", URL: "http://10.0.0.2:8080", State: "up", Models: []wire.PeerModel{{ID: "big-70b", Ref: "peer:desk/big-70b", Status: "loaded"}, {ID: "qwen-7b", Ref: "peer:desk/qwen-7b", Local: true}}},
		{Name: "nas", URL: "http://10.0.0.3:11434", State: "down", Error: "connection refused", Models: []wire.PeerModel{{ID: "llama3:latest", Ref: "peer:nas/llama3:latest"}}},
	}
	fb := newFakeBackend(s)
	fb.cfg.Peers = map[string]config.Peer{"desk": {URL: "http://10.0.0.2:8080", APIKey: "k"}, "nas": {URL: "http://10.0.0.3:11434"}}
	u, l := newTestUIWith(t, fb)
	l.wait(func() {
		u.models = newModelsWindow(u)
		u.models.show()
		u.models.win.Resize(fyne.NewSize(1000, 700))
		u.models.update(u.snap)
	})
	var box *fyne.Container
	l.wait(func() { box = u.models.machines.box })
	for _, want := range []string{"[Add machine…]", "desk — http://10.0.0.2:8080", "Answering — big-70b, peer:desk/qwen-7b (a model here has its ID)",
		"nas — http://10.0.0.3:11434", "Not answering: connection refused — models unavailable: llama3:latest"} {
		var ok bool
		l.wait(func() { ok = hasText(box, want) })
		if !ok {
			var got []string
			l.wait(func() { got = texts(box) })
			t.Fatalf("no %q in %q", want, got)
		}
	}
	// Remove nas.
	l.wait(func() {
		for _, o := range test.LaidOutObjects(box) {
			if b, ok := o.(*widget.Button); ok && b.Text == "Remove" {
				test.Tap(b) // the first: desk
				break
			}
		}
	})
	testbed.WaitFor(t, 10*time.Second, "desk removed from the configuration", func() bool {
		_, ok := fb.Config().Peers["desk"]
		return !ok
	})
	s.Peers = s.Peers[1:] // as the service's next snapshot has it
	l.wait(func() { u.models.update(s) })
	l.wait(func() {
		if hasText(box, "desk —") || !hasText(box, "nas —") {
			t.Errorf("after Remove: %q", texts(box))
		}
	})
}

// Without the feature the section takes no room.
func TestMachinesSectionNotOffered(t *testing.T) {
	fb := newFakeBackend(windowSnapshot())
	u, l := newTestUIWith(t, fb)
	l.wait(func() {
		u.models = newModelsWindow(u)
		u.models.show()
		u.models.update(u.snap)
		if n := len(u.models.machines.box.Objects); n != 0 {
			t.Errorf("section shown without the feature: %q", texts(u.models.machines.box))
		}
	})
}

func (f *fakeBackend) PeersChanged() <-chan struct{} { return nil }

// The tray lists the peers' models under Other machines: a click copies the name to use; a peer
// that does not answer has its models disabled.
func TestPeersMenu(t *testing.T) {
	s := windowSnapshot()
	if len(peersMenu(s)) != 0 {
		t.Fatal("a menu without peers")
	}
	s.Peers = []wire.Peer{
		{Name: "desk", State: "up", Models: []wire.PeerModel{{ID: "big", Ref: "peer:desk/big"}, {ID: "qwen-7b", Ref: "peer:desk/qwen-7b", Local: true}}},
		{Name: "nas", State: "down", Models: []wire.PeerModel{{ID: "llama3", Ref: "peer:nas/llama3"}}},
	}
	m := peersMenu(s)
	if len(m) != 1 || m[0].Label != "Other machines (1 of 2 answering)" || len(m[0].Children) != 2 {
		t.Fatalf("%+v", m)
	}
	desk, nas := m[0].Children[0], m[0].Children[1]
	if desk.Label != "desk — answering" || desk.Children[0].Action != (Action{Kind: ActCopy, Text: "big"}) || desk.Children[1].Action.Text != "peer:desk/qwen-7b" {
		t.Fatalf("%+v", desk)
	}
	if nas.Label != "nas — not answering" || !nas.Children[0].Disabled || nas.Children[0].Label != "llama3 — unavailable" {
		t.Fatalf("%+v", nas)
	}
	found := false
	for _, it := range BuildMenu(s) {
		found = found || it.Key == "peers"
	}
	if !found {
		t.Fatal("not in the tray menu")
	}
}

func (f *fakeBackend) Discovered() []wire.Discovered { return nil }
