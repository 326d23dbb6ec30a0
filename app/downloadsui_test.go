package app

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"

	"github.com/llamatray/llamatray/router/catalog"
	"github.com/llamatray/llamatray/router/hub"
	"github.com/llamatray/llamatray/router/testbed"
	"github.com/llamatray/llamatray/router/testbed/fakehub"
)

// The models window's Downloads section shows a running pull with its progress and Pause; Pause
// keeps what came and offers Resume, which finishes it; the tray header has a line for each.
func TestDownloadsSection(t *testing.T) {
	const repo = "Org/Tiny-GGUF"
	fh := fakehub.New()
	t.Cleanup(fh.Close)
	if err := fh.AddModelRepo(t.TempDir(), repo, "Q8_0"); err != nil {
		t.Fatal(err)
	}
	cache := hub.Cache{Dir: filepath.Join(t.TempDir(), "hub")}
	cat := catalog.New(catalog.Options{Dirs: []string{cache.Dir}})
	m := hub.NewManager(&hub.Client{Endpoint: fh.URL()}, cache, func(string, []string) error { return cat.Scan(context.Background()) }, nil)
	hb := testManagerHub(m, cat.Lookup)
	fb := newFakeBackend(windowSnapshot())
	u, l := newTestUIWith(t, withHub(fb, hb))
	name := repo + ":Q8_0"
	started := fh.Stall(repo, fakehub.FileName(repo, "Q8_0"), 64<<10)
	ref, _ := hub.ParseRef(name)
	if _, err := m.Start(context.Background(), ref); err != nil {
		t.Fatal(err)
	}
	<-started
	testbed.WaitFor(t, 10*time.Second, "the first bytes on disk", func() bool {
		st, _ := m.Status(name)
		return st.Progress.Done >= 64<<10
	})
	show := func() {
		s := windowSnapshot()
		s.Downloads = downloadsFrom(m.List())
		fb.setSnapshot(s)
		l.wait(func() {
			u.snap = s
			if u.models == nil {
				u.models = newModelsWindow(u)
				u.models.show()
				u.models.win.Resize(fyne.NewSize(1000, 700))
			}
			u.models.update(s)
		})
	}
	show()
	l.wait(func() {
		if !hasText(u.models.downloads.box, name) || !hasText(u.models.downloads.box, "% of") {
			t.Errorf("the section does not show the running pull: %q", texts(u.models.downloads.box))
		}
		items := header(u.snap)
		found := false
		for _, it := range items {
			found = found || it.Key == "download "+name
		}
		if !found {
			t.Errorf("the tray header has no line for the pull: %+v", items)
		}
	})
	shoot(t, l, u.models.win, "downloads-running")
	l.wait(func() { test.Tap(findButton(t, u.models.downloads.box, "Pause")) })
	testbed.WaitFor(t, 10*time.Second, "the pull paused", func() bool {
		st, _ := m.Status(name)
		return st.State == hub.StatePaused
	})
	show()
	l.wait(func() {
		if !hasText(u.models.downloads.box, "paused") {
			t.Errorf("the section does not say it is paused: %q", texts(u.models.downloads.box))
		}
	})
	shoot(t, l, u.models.win, "downloads-paused")
	fh.Stall(repo, fakehub.FileName(repo, "Q8_0"), 1<<62)
	l.wait(func() { test.Tap(findButton(t, u.models.downloads.box, "Resume")) })
	testbed.WaitFor(t, 20*time.Second, "the resumed pull to finish", func() bool {
		st, _ := m.Status(name)
		return st.State == hub.StateDownloaded
	})
	show()
	l.wait(func() {
		if len(u.models.downloads.box.Objects) != 0 {
			t.Errorf("a finished pull is still in the section: %q", texts(u.models.downloads.box))
		}
	})
}

// Each state of a download offers what can be done with it: Pause while it runs, Resume once
// paused, Retry once failed (from what came), and Cancel always.
func TestDownloadRowActions(t *testing.T) {
	u, l := newTestUIWith(t, newFakeBackend(windowSnapshot()))
	for _, tc := range []struct {
		state string
		want  []string
		words string
	}{
		{hub.StateDownloading, []string{"[Pause]", "[Cancel]"}, "50% of"},
		{hub.StatePaused, []string{"[Resume]", "[Cancel]"}, "Resume goes on from there"},
		{hub.StateFailed, []string{"[Retry]", "[Cancel]"}, "What came does not match the checksum the Hub lists, so it was deleted: Retry downloads it again."},
	} {
		l.wait(func() {
			row := newDownloadsSection(u).row(u.b, hub.PullStatus{Model: "Org/Tiny-GGUF:Q8_0", State: tc.state, Progress: hub.Progress{Done: 50, Total: 100}, Error: "checksum mismatch"})
			var buttons []string
			for _, s := range texts(row) {
				if strings.HasPrefix(s, "[") {
					buttons = append(buttons, s)
				}
			}
			if !slices.Equal(buttons, tc.want) || !hasText(row, tc.words) {
				t.Errorf("%s: %q", tc.state, texts(row))
			}
		})
	}
}
