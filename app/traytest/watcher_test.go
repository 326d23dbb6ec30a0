//go:build linux

package traytest

import (
	"strings"
	"sync"
	"testing"

	"github.com/godbus/dbus/v5"
	"github.com/godbus/dbus/v5/introspect"
	"github.com/godbus/dbus/v5/prop"
)

// The StatusNotifierWatcher's well-known name, object path and interface.
const (
	watcherName  = "org.kde.StatusNotifierWatcher"
	watcherPath  = dbus.ObjectPath("/StatusNotifierWatcher")
	watcherIface = "org.kde.StatusNotifierWatcher"
	itemIface    = "org.kde.StatusNotifierItem"
)

// trayItem is a registered StatusNotifierItem: the bus name that owns it and its object path.
type trayItem struct {
	Bus  string
	Path dbus.ObjectPath
}

func (it trayItem) String() string { return it.Bus + string(it.Path) }

// watcher is a minimal org.kde.StatusNotifierWatcher, the part of a desktop's system tray that tray
// icons register with. It owns the watcher name on its own connection, which the test also uses
// to talk to the items.
type watcher struct {
	conn  *dbus.Conn
	props *prop.Properties

	mu    sync.Mutex // guards items
	items []trayItem

	registered chan trayItem // every registration, in order
}

// startWatcher connects to the bus at addr and serves the watcher until the test ends.
func startWatcher(t testing.TB, addr string) *watcher {
	t.Helper()
	conn, err := dbus.Connect(addr)
	if err != nil {
		t.Fatalf("connect to the test bus %s: %v", addr, err)
	}
	t.Cleanup(func() { conn.Close() })
	w := &watcher{conn: conn, registered: make(chan trayItem, 16)}
	if err := conn.Export(w, watcherPath, watcherIface); err != nil {
		t.Fatalf("export the watcher: %v", err)
	}
	w.props, err = prop.Export(conn, watcherPath, prop.Map{watcherIface: {
		"RegisteredStatusNotifierItems":  {Value: []string{}, Emit: prop.EmitTrue},
		"IsStatusNotifierHostRegistered": {Value: true, Emit: prop.EmitTrue},
		"ProtocolVersion":                {Value: int32(0), Emit: prop.EmitTrue},
	}})
	if err != nil {
		t.Fatalf("export the watcher properties: %v", err)
	}
	node := &introspect.Node{
		Name: string(watcherPath),
		Interfaces: []introspect.Interface{
			introspect.IntrospectData,
			prop.IntrospectData,
			{
				Name:       watcherIface,
				Methods:    introspect.Methods(w),
				Properties: w.props.Introspection(watcherIface),
				Signals: []introspect.Signal{
					{Name: "StatusNotifierItemRegistered", Args: []introspect.Arg{{Name: "service", Type: "s"}}},
					{Name: "StatusNotifierItemUnregistered", Args: []introspect.Arg{{Name: "service", Type: "s"}}},
					{Name: "StatusNotifierHostRegistered"},
				},
			},
		},
	}
	if err := conn.Export(introspect.NewIntrospectable(node), watcherPath, "org.freedesktop.DBus.Introspectable"); err != nil {
		t.Fatalf("export the watcher introspection: %v", err)
	}
	reply, err := conn.RequestName(watcherName, dbus.NameFlagDoNotQueue)
	if err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("own %s on the test bus: reply %v, %v", watcherName, reply, err)
	}
	return w
}

// RegisterStatusNotifierItem is the D-Bus method a tray icon calls. service is the item's bus
// name (its object path is then /StatusNotifierItem) or, as fyne.io/systray sends, its object
// path on the caller's connection.
func (w *watcher) RegisterStatusNotifierItem(sender dbus.Sender, service string) *dbus.Error {
	it := trayItem{Bus: service, Path: "/StatusNotifierItem"}
	if strings.HasPrefix(service, "/") {
		it = trayItem{Bus: string(sender), Path: dbus.ObjectPath(service)}
	}
	w.mu.Lock()
	w.items = append(w.items, it)
	names := make([]string, len(w.items))
	for i, x := range w.items {
		names[i] = x.String()
	}
	w.mu.Unlock()

	w.props.SetMust(watcherIface, "RegisteredStatusNotifierItems", names)
	w.conn.Emit(watcherPath, watcherIface+".StatusNotifierItemRegistered", it.String())
	select {
	case w.registered <- it:
	default: // nobody waits for this many registrations
	}
	return nil
}

// RegisterStatusNotifierHost is the D-Bus method a tray host calls; this watcher is its own host.
func (w *watcher) RegisterStatusNotifierHost(service string) *dbus.Error {
	return nil
}
