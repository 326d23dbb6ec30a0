//go:build linux

package traytest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
)

// gtkItem is one item of the menu as libdbusmenu-gtk3 builds it (dbusmenu_gtk.py's dump).
type gtkItem struct {
	Label     string     `json:"label"`
	Separator bool       `json:"separator"`
	Sensitive bool       `json:"sensitive"`
	Submenu   *[]gtkItem `json:"submenu"` // nil: the item has no GTK submenu
}

// gtkClient is dbusmenu_gtk.py: the tray menu built by libdbusmenu-gtk3, as XFCE's panel and the
// other GTK trays build it, read back from GTK.
type gtkClient struct {
	stdin io.WriteCloser
	out   *bufio.Scanner

	mu     sync.Mutex // guards stderr
	stderr bytes.Buffer
}

func (c *gtkClient) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stderr.Write(p)
}

func (c *gtkClient) warnings() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stderr.String()
}

// requireGtkMenu returns a python3 with GObject bindings and libdbusmenu-gtk3's typelib: the
// system's (packages install the bindings there, not into a python3 of one's own earlier on
// PATH), else the first on PATH. It skips the test (fails it on CI) when there is none.
func requireGtkMenu(t *testing.T) string {
	t.Helper()
	requireTools(t, "Xvfb", "dbus-daemon")
	var out []byte
	err := exec.ErrNotFound
	for _, py := range []string{"/usr/bin/python3", "python3"} {
		check := exec.Command(py, "-c", "import gi; gi.require_version('Gtk', '3.0'); gi.require_version('DbusmenuGtk3', '0.4'); from gi.repository import DbusmenuGtk3")
		if out, err = check.CombinedOutput(); err == nil {
			return py
		}
	}
	msg := fmt.Sprintf("libdbusmenu-gtk3 for python3 is missing (Debian/Ubuntu: apt-get install python3-gi gir1.2-dbusmenu-gtk3-0.4): %v\n%s", err, out)
	if os.Getenv("CI") != "" {
		t.Fatal(msg + "; CI is set, so this fails instead of skipping")
	}
	t.Skip(msg)
	return ""
}

// startGtkClient builds the menu at bus/menu with libdbusmenu-gtk3 on the test's display and bus.
func startGtkClient(t *testing.T, python, display, busAddr, bus string, menu dbus.ObjectPath) *gtkClient {
	t.Helper()
	cmd := exec.Command(python, "dbusmenu_gtk.py", bus, string(menu))
	cmd.Env = append(os.Environ(), "DISPLAY="+display, "DBUS_SESSION_BUS_ADDRESS="+busAddr, "GDK_BACKEND=x11", "NO_AT_BRIDGE=1")
	c := &gtkClient{}
	cmd.Stderr = c
	var err error
	if c.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c.out = bufio.NewScanner(stdout)
	c.out.Buffer(make([]byte, 1<<16), 1<<22)
	if err := cmd.Start(); err != nil {
		t.Fatalf("start dbusmenu_gtk.py: %v", err)
	}
	t.Cleanup(func() {
		c.stdin.Close()
		cmd.Wait()
		if t.Failed() {
			t.Logf("dbusmenu_gtk.py stderr:\n%s", c.warnings())
		}
	})
	if !c.out.Scan() {
		t.Fatalf("dbusmenu_gtk.py did not start: %v\n%s", c.out.Err(), c.warnings())
	}
	return c
}

// dump asks the client for the menu GTK holds now.
func (c *gtkClient) dump() ([]gtkItem, error) {
	if _, err := io.WriteString(c.stdin, "dump\n"); err != nil {
		return nil, fmt.Errorf("ask dbusmenu_gtk.py for the menu: %w", err)
	}
	if !c.out.Scan() {
		return nil, fmt.Errorf("dbusmenu_gtk.py gave no menu: %v\n%s", c.out.Err(), c.warnings())
	}
	var items []gtkItem
	if err := json.Unmarshal(c.out.Bytes(), &items); err != nil {
		return nil, fmt.Errorf("dbusmenu_gtk.py's menu %q: %w", c.out.Bytes(), err)
	}
	return items, nil
}

// gtkMismatch says where GTK's menu differs from the layout the app serves, "" when it shows
// every item, and every submenu with all its items.
func gtkMismatch(server menuNode, gtk []gtkItem, path string) string {
	if len(server.Children) != len(gtk) {
		return fmt.Sprintf("%s: GTK shows %d items, the app's menu has %d", path, len(gtk), len(server.Children))
	}
	for i, s := range server.Children {
		g := gtk[i]
		here := fmt.Sprintf("%s › %q", path, s.Label)
		switch {
		case (s.Type == "separator") != g.Separator:
			return fmt.Sprintf("%s: GTK separator %v, the app's %v", here, g.Separator, s.Type == "separator")
		case s.Type == "separator":
			continue
		case displayLabel(g.Label) != s.Label:
			return fmt.Sprintf("%s: GTK shows %q", here, displayLabel(g.Label))
		case g.Sensitive != s.Enabled:
			return fmt.Sprintf("%s: GTK sensitive %v, the app's enabled %v", here, g.Sensitive, s.Enabled)
		case len(s.Children) > 0 && g.Submenu == nil:
			return fmt.Sprintf("%s: %d children but GTK has no submenu", here, len(s.Children))
		case len(s.Children) > 0:
			if m := gtkMismatch(s, *g.Submenu, here); m != "" {
				return m
			}
		}
	}
	return ""
}

func gtkString(items []gtkItem, depth int, b *strings.Builder) {
	for _, it := range items {
		label := displayLabel(it.Label)
		if it.Separator {
			label = "────"
		}
		if !it.Sensitive {
			label += "  [disabled]"
		}
		fmt.Fprintf(b, "%s%s\n", strings.Repeat("  ", depth), label)
		if it.Submenu != nil {
			if len(*it.Submenu) == 0 {
				fmt.Fprintf(b, "%s(empty submenu)\n", strings.Repeat("  ", depth+1))
			}
			gtkString(*it.Submenu, depth+1, b)
		}
	}
}

// TestTrayMenuGtk checks the menu as the GTK trays show it (XFCE, MATE, Budgie, Cinnamon, all
// drawing it with libdbusmenu-gtk3): across loads, sleeps and unloads of three models, every
// submenu GTK builds holds every item of the app's menu, and libdbusmenu-gtk has nothing to
// warn about.
func TestTrayMenuGtk(t *testing.T) {
	python := requireGtkMenu(t)
	bin := buildLlamatray(t)
	display := startXvfb(t, 1280, 800)
	busAddr := startBus(t)
	w := startWatcher(t, busAddr)

	modelsDir := t.TempDir()
	ids := []string{"tiny-alpha", "tiny-beta", "tiny-gamma"}
	writeModels(t, modelsDir, ids...)
	args, _ := appArgs(t, modelsDir, "--idle-sleep", "1s")
	app := startLlamatray(t, bin, args, desktopEnv(t, display, busAddr, "LLAMATRAY_AUTOSTART=1"))
	item := waitRegistered(t, w, app)
	menuPath, err := menuPathOf(w.conn, item)
	if err != nil {
		t.Fatal(err)
	}
	gtk := startGtkClient(t, python, display, busAddr, item.Bus, menuPath)

	// settle waits until the app's menu passes ok and GTK shows all of it, then checks that
	// libdbusmenu-gtk did not complain on the way.
	settle := func(what string, ok func(menuNode) bool) menuNode {
		t.Helper()
		var last menuNode
		var lastGtk []gtkItem
		why := "the app's menu never passed"
		deadline := time.Now().Add(waitTimeout)
		for time.Now().Before(deadline) {
			l, err := getLayout(w.conn, item.Bus, menuPath)
			if err == nil && ok(l) {
				last = l
				g, err := gtk.dump()
				if err != nil {
					t.Fatal(err)
				}
				lastGtk = g
				if why = gtkMismatch(l, g, "menu"); why == "" {
					break
				}
			}
			time.Sleep(100 * time.Millisecond)
		}
		if why != "" {
			var b strings.Builder
			gtkString(lastGtk, 1, &b)
			t.Fatalf("%s: %s\napp's menu:\n%s\nGTK's menu:\n%s", what, why, last, b.String())
		}
		if warn := gtk.warnings(); strings.Contains(warn, "WARNING:") {
			t.Fatalf("%s: libdbusmenu-gtk warned:\n%s", what, warn)
		}
		t.Logf("%s: GTK shows every item", what)
		return last
	}
	running := func(l menuNode, id, mark string) bool {
		_, ok := l.child(func(m menuNode) bool {
			return m.Label == mark+" "+id || strings.HasPrefix(m.Label, mark+" "+id+" — ")
		})
		return ok
	}
	available := func(l menuNode, id string) (menuNode, bool) {
		avail, _ := l.child(hasPrefix("Available"))
		return avail.child(modelItem(id))
	}

	layout := settle("at start", func(l menuNode) bool {
		for _, id := range ids {
			if _, ok := available(l, id); !ok {
				return false
			}
		}
		return true
	})
	for i, id := range ids {
		it, _ := available(layout, id)
		if err := click(w.conn, item.Bus, menuPath, it.ID); err != nil {
			t.Fatal(err)
		}
		layout = settle(fmt.Sprintf("after loading %s", id), func(l menuNode) bool {
			for _, up := range ids[:i+1] {
				if !running(l, up, "●") && !running(l, up, "◐") {
					return false
				}
			}
			return true
		})
	}
	// Each model's entry and its submenu keep their item IDs while their labels change (loaded, then
	// asleep, other models coming): a host keeps its widgets, and an open submenu stays open.
	entryIDs := func(l menuNode) map[string][]int32 {
		out := map[string][]int32{}
		for _, id := range ids {
			for _, mark := range []string{"●", "◐"} {
				if e, ok := l.child(func(m menuNode) bool { return running(menuNode{Children: []menuNode{m}}, id, mark) }); ok {
					out[id] = append(out[id], e.ID)
					for _, c := range e.Children {
						out[id] = append(out[id], c.ID)
					}
				}
			}
		}
		return out
	}
	loadedIDs := entryIDs(layout)
	layout = settle("all three asleep", func(l menuNode) bool {
		for _, id := range ids {
			if !running(l, id, "◐") {
				return false
			}
		}
		return true
	})
	for id, was := range loadedIDs {
		if now := entryIDs(layout)[id]; fmt.Sprint(now) != fmt.Sprint(was) {
			t.Errorf("%s: item IDs %v once loaded, %v asleep; want them kept", id, was, now)
		}
	}
	for _, id := range ids {
		entry, ok := layout.child(func(m menuNode) bool { return running(menuNode{Children: []menuNode{m}}, id, "◐") })
		if !ok {
			t.Fatalf("no entry for %s:\n%s", id, layout)
		}
		unload, ok := entry.child(func(m menuNode) bool { return m.Label == "Unload" })
		if !ok {
			t.Fatalf("%s has no Unload:\n%s", id, layout)
		}
		if err := click(w.conn, item.Bus, menuPath, unload.ID); err != nil {
			t.Fatal(err)
		}
		layout = settle(fmt.Sprintf("after unloading %s", id), func(l menuNode) bool {
			_, ok := available(l, id)
			return ok
		})
	}
}

// writeModels writes a tiny GGUF file for each id into dir.
func writeModels(t *testing.T, dir string, ids ...string) {
	t.Helper()
	for _, id := range ids {
		if err := writeTinyModel(filepath.Join(dir, id+".gguf")); err != nil {
			t.Fatal(err)
		}
	}
}
