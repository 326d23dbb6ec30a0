package app

import (
	"strconv"
	"testing"
	"time"

	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/service"
	"github.com/llamatray/llamatray/router/testbed"
)

// pinOnSave is the real service whose save of the configuration is overtaken by a pin: the pin is
// made through the service (as POST /models/pin or `llamatray pin` make it) after the window
// built its change and before the change is written.
type pinOnSave struct {
	*serviceBackend
	svc *service.Service
	id  string
}

func (p pinOnSave) EditConfig(change func(*config.Config) error) error {
	if err := p.svc.SetPinned(p.id, true); err != nil {
		return err
	}
	return p.serviceBackend.EditConfig(change)
}

// pinKept fails the test unless model id is pinned in the file at cfgPath, in the configuration in
// force and in the engine.
func pinKept(t *testing.T, svc *service.Service, cfgPath, id string) {
	t.Helper()
	c, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Models[id].Pinned {
		t.Errorf("the pin of %s is gone from the file: %+v", id, c.Models[id])
	}
	if !svc.Config().Models[id].Pinned {
		t.Errorf("the pin of %s is gone from the configuration in force", id)
	}
	if st, err := svc.Engine().Model(id); err != nil || !st.Pinned {
		t.Errorf("%s is not pinned in the engine (%v)", id, err)
	}
}

// The settings window saves its values over the configuration in force at save time: a pin made
// while its save was on the way is kept, in the file and in the service.
func TestSettingsWindowKeepsAPinMadeMeanwhile(t *testing.T) {
	svc, cfgPath := startService(t, "127.0.0.1:"+strconv.Itoa(testbed.FreePort(t)))
	const id = "tiny-chat"
	sb := newServiceBackend(svc)
	u, l := newWatchedUI(t, pinOnSave{serviceBackend: sb, svc: svc, id: id})
	var sw *settingsWindow
	l.wait(func() {
		u.showSettings()
		sw = u.settings
		sw.entries[keyMaxLoaded].SetText("3")
		test.Tap(sw.save)
	})
	testbed.WaitFor(t, 10*time.Second, "the settings save", func() bool {
		var text string
		l.wait(func() { text = sw.general.Text })
		return text == "Saved and applied."
	})
	if c, err := config.Load(cfgPath); err != nil || c.MaxLoaded != 3 {
		t.Fatalf("saved max_loaded %d, %v; want 3", c.MaxLoaded, err)
	}
	pinKept(t, svc, cfgPath, id)
}

// The model settings window saves only what was changed in it over the section as it is at save
// time: a model pinned through the service after the window opened (its form unpinned) stays
// pinned when the window saves another setting.
func TestModelSettingsWindowKeepsAPinMadeMeanwhile(t *testing.T) {
	svc, cfgPath := startService(t, "127.0.0.1:"+strconv.Itoa(testbed.FreePort(t)))
	b := newServiceBackend(svc)
	u, l := newWatchedUI(t, b)
	const id = "tiny-chat"
	testbed.WaitFor(t, 10*time.Second, "the snapshot", func() bool {
		var ok bool
		l.wait(func() { ok = len(u.snap.Models) == 1 })
		return ok
	})
	var w *modelSettingsWindow
	l.wait(func() { u.showModelSettings(id); w = u.modelSettings[id] })
	if err := svc.SetPinned(id, true); err != nil {
		t.Fatal(err)
	}
	l.wait(func() {
		w.ctx.SetText("256")
		test.Tap(w.apply)
	})
	testbed.WaitFor(t, 10*time.Second, "the save", func() bool {
		var text string
		l.wait(func() { text = w.result.Text })
		return text != "" && text != "Saving…"
	})
	var result string
	var ok bool
	l.wait(func() { result, ok = w.result.Text, w.result.Importance == widget.SuccessImportance })
	if !ok {
		t.Fatalf("the save says %q", result)
	}
	if c, err := config.Load(cfgPath); err != nil || c.Models[id].CtxSize != 256 {
		t.Fatalf("saved %+v, %v; want ctx_size 256", c.Models[id], err)
	}
	pinKept(t, svc, cfgPath, id)
}
