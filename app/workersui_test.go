package app

import (
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/wire"
)

const fakeLendLines = "[workers.desk]\naddress = \"desk:50052\"\ntoken = \"k3qz-8fw2-m9dx-4tpa-v7ne-2hcs-q5yb\"\n"

func (f *fakeBackend) SetLending(on bool) error {
	f.record("lend %v", on)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.snap.Lending.On = on
	return nil
}
func (f *fakeBackend) LendConfigLines() (string, error) { return fakeLendLines, nil }
func (f *fakeBackend) NewLendToken() error              { return f.record("new lend token") }

// The tray's Lend this machine: a checkmark that says where it is lent, or that it failed; absent
// where the backend does not lend.
func TestLendMenu(t *testing.T) {
	for _, c := range []struct {
		l       wire.Lending
		label   string
		checked bool
	}{
		{wire.Lending{}, "", false},
		{wire.Lending{State: wire.LendOff, Listen: "0.0.0.0:50052"}, "Lend this machine", false},
		{wire.Lending{On: true, State: wire.LendStarting}, "Lend this machine (starting…)", true},
		{wire.Lending{On: true, State: wire.LendOn, Addr: "[::]:50052"}, "Lend this machine (on [::]:50052)", true},
		{wire.Lending{On: true, State: wire.LendFailed, Error: "port in use"}, "Lend this machine (failed — see the window)", true},
	} {
		s := windowSnapshot()
		s.Lending = c.l
		var got *MenuItem
		for _, it := range BuildMenu(s) {
			if it.Action.Kind == ActToggleLend {
				got = &it
			}
		}
		switch {
		case c.label == "" && got != nil:
			t.Errorf("%+v: item %+v, want none", c.l, *got)
		case c.label != "" && (got == nil || got.Label != c.label || got.Checked != c.checked):
			t.Errorf("%+v: item %+v, want %q checked=%v", c.l, got, c.label, c.checked)
		}
	}
}

// The Other machines section with workers and lending: each worker's address, state, devices with
// their memory and the model using it; the lending toggle and the lines a head needs.
func TestWorkersSection(t *testing.T) {
	s := windowSnapshot()
	s.Peers = []wire.Peer{{Name: "desk", URL: "http://10.0.0.2:8080", State: "up", Models: []wire.PeerModel{{ID: "big-70b", Ref: "peer:desk/big-70b"}}}}
	s.Workers = []wire.WorkerStatus{
		{Name: "gpu-box", Address: "10.0.0.5:50052", State: wire.WorkerUp, Model: "llama-70b-Q4_K_M",
			Devices: []wire.WorkerDevice{{Name: "RPC0", Total: 24 << 30, Free: 23 << 30}}},
		{Name: "laptop", Address: "10.0.0.6:50052", State: wire.WorkerRefused, LastError: "worker laptop (10.0.0.6:50052): worker refused the token"},
	}
	s.Lending = wire.Lending{On: true, State: wire.LendOn, Listen: "0.0.0.0:50052", Addr: "0.0.0.0:50052", Name: "this-pc"}
	fb := newFakeBackend(s)
	fb.cfg.Peers = map[string]config.Peer{"desk": {URL: "http://10.0.0.2:8080"}}
	u, l := newTestUIWith(t, fb)
	l.wait(func() {
		u.models = newModelsWindow(u)
		u.models.show()
		u.models.win.Resize(fyne.NewSize(1000, 760))
		u.models.update(u.snap)
	})
	var box *fyne.Container
	l.wait(func() { box = u.models.machines.box })
	for _, want := range []string{"desk — http://10.0.0.2:8080", "gpu-box — 10.0.0.5:50052",
		"Answering · RPC0 24 GiB (23 GiB free) · used by llama-70b-Q4_K_M",
		"laptop — 10.0.0.6:50052", "Refuses this machine: worker refused the token",
		`Lent as worker "this-pc" on 0.0.0.0:50052`, "[Lines for the other machine…]"} {
		var ok bool
		l.wait(func() { ok = hasText(box, want) })
		if !ok {
			var got []string
			l.wait(func() { got = texts(box) })
			t.Fatalf("no %q in %q", want, got)
		}
	}
	// The section comes after the models: the window scrolled down to it, as a person would.
	l.wait(func() {
		for _, o := range test.LaidOutObjects(u.models.win.Content()) {
			if sc, ok := o.(*container.Scroll); ok {
				sc.ScrollToBottom()
			}
		}
	})
	shoot(t, l, u.models.win, "other-machines")

	// The lines for the head, with the token, in a dialog.
	l.wait(func() { test.Tap(findButton(t, box, "Lines for the other machine…")) })
	l.wait(func() {
		if top := overlayTop(u.models.win); top == nil || !hasText(top, `token = "k3qz-8fw2-m9dx-4tpa-v7ne-2hcs-q5yb"`) {
			t.Errorf("the head's lines not shown: %v", top)
		}
	})
	shoot(t, l, u.models.win, "other-machines-lend-lines")

	// The toggle turns lending off through the backend, as the tray's item does.
	l.wait(func() {
		for _, o := range test.LaidOutObjects(box) {
			if c, ok := o.(*widget.Check); ok && c.Text == "Lend this machine to other Llamatrays" {
				test.Tap(c)
			}
		}
	})
	fb.waitCall(t, "lend false")
	l.wait(func() { u.do(Action{Kind: ActToggleLend}) }) // the snapshot still says on: the tray turns it off too
	fb.waitCall(t, "lend false")
}
