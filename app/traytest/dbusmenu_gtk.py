#!/usr/bin/env python3
"""dbusmenu_gtk.py BUS_NAME MENU_PATH builds the tray menu at BUS_NAME MENU_PATH with
libdbusmenu-gtk3, as the tray of XFCE, MATE, Budgie and Cinnamon do (DbusmenuGtkMenu), and
reports what GTK would show.

It reads commands on stdin, one a line, and answers each with one line of JSON on stdout:

  dump    the menu as GTK holds it: a list of items, each {"label", "sensitive", "separator",
          "submenu"}, "submenu" being the list of the item's GTK submenu items, or null when the
          item has no GTK submenu.

libdbusmenu-gtk's warnings (such as "Children but no menu") go to stderr, prefixed "WARNING:".
Needs python3-gi and gir1.2-dbusmenu-gtk3-0.4, a display and a session bus.
"""
import json
import sys

import gi

gi.require_version("Gtk", "3.0")
gi.require_version("DbusmenuGtk3", "0.4")
from gi.repository import DbusmenuGtk3, GLib, Gtk  # noqa: E402


def tree(shell):
    out = []
    for w in shell.get_children():
        if isinstance(w, Gtk.SeparatorMenuItem):
            out.append({"label": "", "separator": True, "sensitive": True, "submenu": None})
            continue
        if not isinstance(w, Gtk.MenuItem) or not w.get_visible():
            continue
        sub = w.get_submenu()
        out.append({
            "label": w.get_label() or "",
            "separator": False,
            "sensitive": w.get_sensitive(),
            "submenu": tree(sub) if sub is not None else None,
        })
    return out


def on_log(domain, level, message, *_):
    print("WARNING: %s: %s" % (domain, message), file=sys.stderr, flush=True)


def on_stdin(source, condition):
    line = source.readline()
    if not line:
        Gtk.main_quit()
        return False
    if line.strip() == "dump":
        print(json.dumps(tree(menu)), flush=True)
    else:
        print(json.dumps({"error": "unknown command %r" % line.strip()}), flush=True)
    return True


levels = GLib.LogLevelFlags.LEVEL_WARNING | GLib.LogLevelFlags.LEVEL_CRITICAL
for domain in ("libdbusmenu-gtk", "LIBDBUSMENU-GTK", "libdbusmenu-glib", "LIBDBUSMENU-GLIB", "Gtk"):
    GLib.log_set_handler(domain, levels, on_log, None)

menu = DbusmenuGtk3.Menu.new(sys.argv[1], sys.argv[2])
GLib.io_add_watch(sys.stdin, GLib.PRIORITY_DEFAULT, GLib.IO_IN | GLib.IO_HUP, on_stdin)
print(json.dumps({"ready": True}), flush=True)
Gtk.main()
