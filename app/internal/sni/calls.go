package sni

import (
	"sync/atomic"

	"github.com/godbus/dbus/v5"
)

// Why the menu answers its calls itself: godbus runs each incoming method call on a goroutine of
// its own, so replies may leave in another order than the calls came. libdbusmenu (the GTK trays)
// asks for the properties of new items one menu level at a time, in separate GetGroupProperties
// calls, and creates the GTK widget of each item when its reply comes. When the reply about a
// submenu's items overtakes the reply about the submenu's own item, the items find no GTK menu to
// go in ("Children but no menu, someone's been naughty with their 'children-display' property")
// and the submenu stays empty for good.
//
// So the menu's calls are answered on the connection's reader goroutine, which sees messages in
// the order they arrive (an incoming interceptor), and the reply is sent from there. The call is
// then marked as wanting no reply, and the exported stubs that godbus still dispatches it to
// (menuStubs, for introspection and argument checking) answer nothing.

// answerer answers the menu's calls in order; see above.
type answerer struct {
	menu *menu
	conn atomic.Pointer[dbus.Conn] // set once connected; nil before
}

// intercept is the connection's incoming interceptor.
func (a *answerer) intercept(msg *dbus.Message) {
	conn := a.conn.Load()
	if conn == nil || msg.Type != dbus.TypeMethodCall {
		return
	}
	path, _ := msg.Headers[dbus.FieldPath].Value().(dbus.ObjectPath)
	iface, _ := msg.Headers[dbus.FieldInterface].Value().(string)
	member, _ := msg.Headers[dbus.FieldMember].Value().(string)
	if path != menuPath || iface != menuIface {
		return
	}
	body, derr, ok := a.menu.call(member, msg.Body)
	if !ok {
		return // not a menu method: godbus answers with its error
	}
	wantsReply := msg.Flags&dbus.FlagNoReplyExpected == 0
	msg.Flags |= dbus.FlagNoReplyExpected // the stub's reply would be a second one
	if !wantsReply {
		return
	}
	reply := &dbus.Message{
		Type:    dbus.TypeMethodReply,
		Headers: map[dbus.HeaderField]dbus.Variant{dbus.FieldReplySerial: dbus.MakeVariant(msg.Serial())},
		Body:    body,
	}
	if sender, ok := msg.Headers[dbus.FieldSender]; ok {
		reply.Headers[dbus.FieldDestination] = sender
	}
	if derr != nil {
		reply.Type = dbus.TypeError
		reply.Headers[dbus.FieldErrorName] = dbus.MakeVariant(derr.Name)
		reply.Body = derr.Body
	}
	if len(reply.Body) > 0 {
		reply.Headers[dbus.FieldSignature] = dbus.MakeVariant(dbus.SignatureOf(reply.Body...))
	}
	conn.Send(reply, nil)
}

// call runs one com.canonical.dbusmenu method with the call's arguments and returns the reply's
// body; ok is false for a method the menu does not have.
func (m *menu) call(member string, args []any) (body []any, derr *dbus.Error, ok bool) {
	bad := func(err error) ([]any, *dbus.Error, bool) {
		return nil, dbus.NewError("org.freedesktop.DBus.Error.InvalidArgs", []any{err.Error()}), true
	}
	switch member {
	case "GetLayout":
		var parent, depth int32
		var names []string
		if err := dbus.Store(args, &parent, &depth, &names); err != nil {
			return bad(err)
		}
		rev, l, derr := m.getLayout(parent, depth, names)
		return []any{rev, l}, derr, true
	case "GetGroupProperties":
		var ids []int32
		var names []string
		if err := dbus.Store(args, &ids, &names); err != nil {
			return bad(err)
		}
		p, derr := m.getGroupProperties(ids, names)
		return []any{p}, derr, true
	case "GetProperty":
		var id int32
		var name string
		if err := dbus.Store(args, &id, &name); err != nil {
			return bad(err)
		}
		v, derr := m.getProperty(id, name)
		return []any{v}, derr, true
	case "Event":
		var id int32
		var eventID string
		var data dbus.Variant
		var ts uint32
		if err := dbus.Store(args, &id, &eventID, &data, &ts); err != nil {
			return bad(err)
		}
		if !m.handle(id, eventID) { // a click runs the item's Click
			return []any{}, unknownItem(id), true
		}
		return []any{}, nil, true
	case "EventGroup":
		var events []event
		if err := dbus.Store(args, &events); err != nil {
			return bad(err)
		}
		ids, derr := m.eventGroup(events)
		return []any{ids}, derr, true
	case "AboutToShow":
		var id int32
		if err := dbus.Store(args, &id); err != nil {
			return bad(err)
		}
		return []any{false}, nil, true // the menu is always up to date
	case "AboutToShowGroup":
		var ids []int32
		if err := dbus.Store(args, &ids); err != nil {
			return bad(err)
		}
		return []any{[]int32{}, []int32{}}, nil, true // nothing needs an update
	}
	return nil, nil, false
}

// menuStubs are the menu's methods as godbus exports them: they check the arguments' types and
// do nothing, the call having been answered by answerer.intercept.
type menuStubs struct{}

func (menuStubs) GetLayout(int32, int32, []string) *dbus.Error          { return nil }
func (menuStubs) GetGroupProperties([]int32, []string) *dbus.Error      { return nil }
func (menuStubs) GetProperty(int32, string) *dbus.Error                 { return nil }
func (menuStubs) Event(int32, string, dbus.Variant, uint32) *dbus.Error { return nil }
func (menuStubs) EventGroup([]event) *dbus.Error                        { return nil }
func (menuStubs) AboutToShow(int32) *dbus.Error                         { return nil }
func (menuStubs) AboutToShowGroup([]int32) *dbus.Error                  { return nil }
