// Package sni is the tray icon on Linux and the BSDs: a StatusNotifierItem (org.kde.StatusNotifierItem)
// with its menu served over com.canonical.dbusmenu, on its own session bus connection.
//
// It exists because the desktops whose tray draws the menu with libdbusmenu-gtk (XFCE, MATE,
// Budgie, Cinnamon) need a menu that changes in whole steps with stable item IDs; see menu.
// Nothing here polls: the icon re-registers when a StatusNotifierWatcher appears on the bus.
package sni

import (
	"bytes"
	"cmp"
	"fmt"
	"image"
	"image/draw"
	"image/png"
	"log/slog"
	"os"
	"slices"

	"github.com/godbus/dbus/v5"
	"github.com/godbus/dbus/v5/introspect"
	"github.com/godbus/dbus/v5/prop"
)

// The item's object path and interface, and the watcher it registers with.
const (
	itemPath     = dbus.ObjectPath("/StatusNotifierItem")
	itemIface    = "org.kde.StatusNotifierItem"
	watcherName  = "org.kde.StatusNotifierWatcher"
	watcherPath  = dbus.ObjectPath("/StatusNotifierWatcher")
	watcherIface = "org.kde.StatusNotifierWatcher"
)

// Options describe the tray icon.
type Options struct {
	ID         string // the application's identifier, e.g. "llamatray"
	Title      string // its name, as the host may show it
	Icon       []byte // PNG
	OnActivate func() // a primary click on the icon; nil: a click opens the menu. Runs on its own goroutine.
	// OnHost, when set, is told whether a tray host shows the icon: after each try to register
	// with it, and when it goes away. Runs on the tray's goroutine.
	OnHost func(hosted bool)
	Logger *slog.Logger
}

// pixmap is one icon image: width, height, ARGB32 pixels in network byte order.
type pixmap struct {
	W, H int32
	Pix  []byte
}

// tooltip is the StatusNotifierItem ToolTip: icon name, icon pixmaps, title, text.
type tooltip struct {
	IconName string
	Pixmaps  []pixmap
	Title    string
	Text     string
}

// Tray is a tray icon with its menu. Its methods may be called from any goroutine, SetMenu from
// one at a time.
type Tray struct {
	conn     *dbus.Conn
	name     string // the bus name the item is registered under
	props    *prop.Properties
	menu     *menu
	log      *slog.Logger
	activate func()
	onHost   func(bool)
}

// Start connects to the session bus, shows the icon and keeps it registered with the tray host
// until Close.
func Start(o Options) (*Tray, error) {
	log := cmp.Or(o.Logger, slog.Default())
	answers := &answerer{}
	conn, err := dbus.ConnectSessionBus(dbus.WithIncomingInterceptor(answers.intercept))
	if err != nil {
		return nil, fmt.Errorf("tray: connect to the session bus: %w", err)
	}
	t := &Tray{conn: conn, name: fmt.Sprintf("org.kde.StatusNotifierItem-%d-1", os.Getpid()), log: log, activate: o.OnActivate, onHost: o.OnHost}
	t.menu = newMenu(conn, log)
	answers.menu = t.menu
	answers.conn.Store(conn)
	if err := t.export(o); err != nil {
		conn.Close()
		return nil, err
	}
	if reply, err := conn.RequestName(t.name, dbus.NameFlagDoNotQueue); err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		conn.Close()
		return nil, fmt.Errorf("tray: own the bus name %s: reply %v: %w", t.name, reply, err)
	}
	// The host may come later, or restart: register whenever a watcher takes its name.
	if err := conn.AddMatchSignal(
		dbus.WithMatchSender("org.freedesktop.DBus"),
		dbus.WithMatchInterface("org.freedesktop.DBus"),
		dbus.WithMatchMember("NameOwnerChanged"),
		dbus.WithMatchArg(0, watcherName),
	); err != nil {
		conn.Close()
		return nil, fmt.Errorf("tray: watch for a tray host: %w", err)
	}
	signals := make(chan *dbus.Signal, 8)
	conn.Signal(signals)
	go t.stayRegistered(signals)
	return t, nil
}

func (t *Tray) export(o Options) error {
	icon, err := pixmaps(o.Icon)
	if err != nil {
		return err
	}
	t.props, err = prop.Export(t.conn, itemPath, prop.Map{itemIface: {
		"Category":            {Value: "ApplicationStatus", Emit: prop.EmitTrue},
		"Id":                  {Value: o.ID, Emit: prop.EmitTrue},
		"Title":               {Value: o.Title, Emit: prop.EmitTrue},
		"Status":              {Value: "Active", Emit: prop.EmitTrue},
		"WindowId":            {Value: int32(0), Emit: prop.EmitTrue},
		"IconName":            {Value: "", Emit: prop.EmitTrue},
		"IconThemePath":       {Value: "", Emit: prop.EmitTrue},
		"IconPixmap":          {Value: icon, Emit: prop.EmitTrue},
		"OverlayIconName":     {Value: "", Emit: prop.EmitTrue},
		"OverlayIconPixmap":   {Value: []pixmap{}, Emit: prop.EmitTrue},
		"AttentionIconName":   {Value: "", Emit: prop.EmitTrue},
		"AttentionIconPixmap": {Value: []pixmap{}, Emit: prop.EmitTrue},
		"AttentionMovieName":  {Value: "", Emit: prop.EmitTrue},
		"ToolTip":             {Value: tooltip{Pixmaps: []pixmap{}, Title: o.Title}, Emit: prop.EmitTrue},
		"ItemIsMenu":          {Value: o.OnActivate == nil, Emit: prop.EmitTrue},
		"Menu":                {Value: menuPath, Emit: prop.EmitTrue},
	}})
	if err != nil {
		return fmt.Errorf("tray: export the item's properties: %w", err)
	}
	if err := t.conn.Export(t, itemPath, itemIface); err != nil {
		return fmt.Errorf("tray: export the item: %w", err)
	}
	if _, err := prop.Export(t.conn, menuPath, prop.Map{menuIface: {
		"Version":       {Value: menuVersion, Emit: prop.EmitTrue},
		"TextDirection": {Value: "ltr", Emit: prop.EmitTrue},
		"Status":        {Value: "normal", Emit: prop.EmitTrue},
		"IconThemePath": {Value: []string{}, Emit: prop.EmitTrue},
	}}); err != nil {
		return fmt.Errorf("tray: export the menu's properties: %w", err)
	}
	if err := t.conn.Export(menuStubs{}, menuPath, menuIface); err != nil {
		return fmt.Errorf("tray: export the menu: %w", err)
	}
	for path, xml := range map[dbus.ObjectPath]string{itemPath: itemXML, menuPath: menuXML} {
		node := introspect.Introspectable(`<node>` + introspect.IntrospectDataString + prop.IntrospectDataString + xml + `</node>`)
		if err := t.conn.Export(node, path, "org.freedesktop.DBus.Introspectable"); err != nil {
			return fmt.Errorf("tray: export the introspection of %s: %w", path, err)
		}
	}
	return nil
}

// stayRegistered registers now, then again each time a watcher takes its name, until the
// connection closes.
func (t *Tray) stayRegistered(signals chan *dbus.Signal) {
	t.register()
	for sig := range signals {
		if sig.Name != "org.freedesktop.DBus.NameOwnerChanged" || len(sig.Body) < 3 {
			continue
		}
		if owner, _ := sig.Body[2].(string); owner != "" {
			t.register()
		} else {
			t.hosted(false) // the tray host went away
		}
	}
}

func (t *Tray) register() {
	call := t.conn.Object(watcherName, watcherPath).Call(watcherIface+".RegisterStatusNotifierItem", 0, t.name)
	if call.Err != nil {
		t.log.Info("no system tray yet; the icon shows when one starts", "err", call.Err)
		t.hosted(false)
		return
	}
	t.log.Debug("tray icon registered", "name", t.name)
	t.hosted(true)
}

func (t *Tray) hosted(ok bool) {
	if t.onHost != nil {
		t.onHost(ok)
	}
}

// SetIcon changes the icon (PNG).
func (t *Tray) SetIcon(png []byte) error {
	icon, err := pixmaps(png)
	if err != nil {
		return err
	}
	t.props.SetMust(itemIface, "IconPixmap", icon)
	if err := t.conn.Emit(itemPath, itemIface+".NewIcon"); err != nil {
		return fmt.Errorf("tray: announce the new icon: %w", err)
	}
	return nil
}

// SetMenu replaces the menu; see menu.set.
func (t *Tray) SetMenu(items []Item) { t.menu.set(items) }

// Close removes the icon.
func (t *Tray) Close() error { return t.conn.Close() }

// Activate is org.kde.StatusNotifierItem.Activate: a primary click on the icon.
func (t *Tray) Activate(x, y int32) *dbus.Error {
	if t.activate != nil {
		go t.activate()
	}
	return nil
}

// SecondaryActivate is a middle click; it does what a primary click does.
func (t *Tray) SecondaryActivate(x, y int32) *dbus.Error { return t.Activate(x, y) }

// ContextMenu is asked of items that draw their own menu; this one's menu is the host's to draw.
func (t *Tray) ContextMenu(x, y int32) *dbus.Error { return nil }

// Scroll is a scroll over the icon; it does nothing.
func (t *Tray) Scroll(delta int32, orientation string) *dbus.Error { return nil }

// pixmaps decodes a PNG into the icon pixmap list.
func pixmaps(data []byte) ([]pixmap, error) {
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("tray: decode the icon: %w", err)
	}
	b := img.Bounds()
	rgba := image.NewNRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
	draw.Draw(rgba, rgba.Bounds(), img, b.Min, draw.Src)
	pix := make([]byte, 0, len(rgba.Pix))
	for p := range slices.Chunk(rgba.Pix, 4) {
		pix = append(pix, p[3], p[0], p[1], p[2])
	}
	return []pixmap{{W: int32(b.Dx()), H: int32(b.Dy()), Pix: pix}}, nil
}

const itemXML = `<interface name="org.kde.StatusNotifierItem">
<method name="Activate"><arg name="x" type="i" direction="in"/><arg name="y" type="i" direction="in"/></method>
<method name="SecondaryActivate"><arg name="x" type="i" direction="in"/><arg name="y" type="i" direction="in"/></method>
<method name="ContextMenu"><arg name="x" type="i" direction="in"/><arg name="y" type="i" direction="in"/></method>
<method name="Scroll"><arg name="delta" type="i" direction="in"/><arg name="orientation" type="s" direction="in"/></method>
<signal name="NewTitle"/><signal name="NewIcon"/><signal name="NewAttentionIcon"/><signal name="NewOverlayIcon"/>
<signal name="NewToolTip"/><signal name="NewStatus"><arg name="status" type="s"/></signal>
<property name="Category" type="s" access="read"/><property name="Id" type="s" access="read"/>
<property name="Title" type="s" access="read"/><property name="Status" type="s" access="read"/>
<property name="WindowId" type="i" access="read"/><property name="IconName" type="s" access="read"/>
<property name="IconThemePath" type="s" access="read"/><property name="IconPixmap" type="a(iiay)" access="read"/>
<property name="OverlayIconName" type="s" access="read"/><property name="OverlayIconPixmap" type="a(iiay)" access="read"/>
<property name="AttentionIconName" type="s" access="read"/><property name="AttentionIconPixmap" type="a(iiay)" access="read"/>
<property name="AttentionMovieName" type="s" access="read"/><property name="ToolTip" type="(sa(iiay)ss)" access="read"/>
<property name="ItemIsMenu" type="b" access="read"/><property name="Menu" type="o" access="read"/>
</interface>`

const menuXML = `<interface name="com.canonical.dbusmenu">
<property name="Version" type="u" access="read"/><property name="TextDirection" type="s" access="read"/>
<property name="Status" type="s" access="read"/><property name="IconThemePath" type="as" access="read"/>
<method name="GetLayout"><arg type="i" name="parentId" direction="in"/><arg type="i" name="recursionDepth" direction="in"/>
<arg type="as" name="propertyNames" direction="in"/><arg type="u" name="revision" direction="out"/>
<arg type="(ia{sv}av)" name="layout" direction="out"/></method>
<method name="GetGroupProperties"><arg type="ai" name="ids" direction="in"/><arg type="as" name="propertyNames" direction="in"/>
<arg type="a(ia{sv})" name="properties" direction="out"/></method>
<method name="GetProperty"><arg type="i" name="id" direction="in"/><arg type="s" name="name" direction="in"/>
<arg type="v" name="value" direction="out"/></method>
<method name="Event"><arg type="i" name="id" direction="in"/><arg type="s" name="eventId" direction="in"/>
<arg type="v" name="data" direction="in"/><arg type="u" name="timestamp" direction="in"/></method>
<method name="EventGroup"><arg type="a(isvu)" name="events" direction="in"/><arg type="ai" name="idErrors" direction="out"/></method>
<method name="AboutToShow"><arg type="i" name="id" direction="in"/><arg type="b" name="needUpdate" direction="out"/></method>
<method name="AboutToShowGroup"><arg type="ai" name="ids" direction="in"/><arg type="ai" name="updatesNeeded" direction="out"/>
<arg type="ai" name="idErrors" direction="out"/></method>
<signal name="ItemsPropertiesUpdated"><arg type="a(ia{sv})" name="updatedProps"/><arg type="a(ias)" name="removedProps"/></signal>
<signal name="LayoutUpdated"><arg type="u" name="revision"/><arg type="i" name="parent"/></signal>
<signal name="ItemActivationRequested"><arg type="i" name="id"/><arg type="u" name="timestamp"/></signal>
</interface>`
