#!/usr/bin/env bash
# xfce-tray-shot.sh OUTDIR shows the tray menu of the real llamatray in a real XFCE panel and takes
# pictures of it: the panel's systray plugin is a StatusNotifierItem host that draws menus with
# libdbusmenu-gtk3, as MATE, Budgie and Cinnamon do.
#
# It builds llamatray and the fake llama-server, writes three tiny models, and runs xfconfd and
# xfce4-panel (one panel at the top holding only the systray plugin) on a private Xvfb display and
# D-Bus session bus (scripts/with-desktop.sh), with their own HOME and XDG dirs. Two models are
# loaded and left to fall asleep; then xdotool right-clicks the tray icon and hovers each model's
# submenu and Available, and ImageMagick's import captures the screen each time:
#   OUTDIR/xfce-menu.png, OUTDIR/xfce-<model>.png for both loaded models, OUTDIR/xfce-available.png
# Then llamatray runs again with --max-loaded 1: tiny-alpha streams a long answer (the fake's
# FAKE_LLAMA_TOKENS and FAKE_LLAMA_TOKEN_DELAY) while a request for tiny-beta waits, and
# OUTDIR/xfce-waiting.png shows Available with tiny-beta's label saying why it waits.
# It fails when libdbusmenu-gtk warns (as it does about a submenu it cannot fill), a picture
# shows no submenu, or tiny-beta does not wait.
#
# Needs: go, curl, Xvfb, dbus-daemon, xdotool, ImageMagick, xfce4-panel and xfconf.
set -euo pipefail

if [ $# -ne 1 ]; then
	echo "usage: $0 OUTDIR" >&2
	exit 2
fi
out=$1
case $out in /*) ;; *) out="$PWD/$out" ;; esac
root=$(cd "$(dirname "$0")/.." && pwd)
xfconfd=""
for f in /usr/lib/*/xfce4/xfconf/xfconfd /usr/lib/xfce4/xfconf/xfconfd /usr/libexec/xfconfd; do
	[ -x "$f" ] && xfconfd=$f && break
done

if [ -z "${LLAMATRAY_XFCE_DESKTOP:-}" ]; then
	for tool in go curl Xvfb dbus-daemon xdotool import compare xfce4-panel; do
		if ! command -v "$tool" >/dev/null 2>&1; then
			echo "xfce-tray-shot: $tool not found (Debian/Ubuntu: apt-get install xvfb dbus xdotool imagemagick xfce4-panel xfconf)" >&2
			exit 127
		fi
	done
	if [ -z "$xfconfd" ]; then
		echo "xfce-tray-shot: xfconfd not found (Debian/Ubuntu: apt-get install xfconf)" >&2
		exit 127
	fi
	LLAMATRAY_XFCE_DESKTOP=1 WITH_DESKTOP_SCREEN=1440x600x24 exec "$root/scripts/with-desktop.sh" "$0" "$out"
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/llamatray-xfce.XXXXXX")
pids=()
cleanup() {
	local rc=$?
	for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
		kill -TERM "${pids[i]}" 2>/dev/null || true
		wait "${pids[i]}" 2>/dev/null || true
	done
	if [ "$rc" -ne 0 ]; then
		for f in llamatray.log panel.log; do
			[ -f "$tmp/$f" ] && { echo "xfce-tray-shot: $f:" >&2; tail -n 30 "$tmp/$f" >&2; }
		done
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
log_name=xfce-tray-shot
# shellcheck source=scripts/lib-desktop.sh
. "$root/scripts/lib-desktop.sh"

cd "$root"
build_app "$tmp"
mkdir -p "$tmp/models"
go run ./router/testbed/fakemodels "$tmp/models" >/dev/null <<'EOF'
# name      arch  blocks embd ffn  heads kv vocab file_type context
tiny-alpha  llama 2      64   256  4     4  1000  1         4096
tiny-beta   llama 2      64   256  4     4  1000  1         4096
tiny-gamma  llama 2      64   256  4     4  1000  1         4096
EOF

for d in home config data cache state run; do mkdir -p "$tmp/$d" && chmod 700 "$tmp/$d"; done
export HOME="$tmp/home" XDG_CONFIG_HOME="$tmp/config" XDG_DATA_HOME="$tmp/data" XDG_CACHE_HOME="$tmp/cache" \
	XDG_STATE_HOME="$tmp/state" XDG_RUNTIME_DIR="$tmp/run" NO_AT_BRIDGE=1
unset WAYLAND_DISPLAY SESSION_MANAGER

# One panel along the top, 32 px high, holding the systray plugin only: the icon is its first.
mkdir -p "$XDG_CONFIG_HOME/xfce4/xfconf/xfce-perchannel-xml"
cat >"$XDG_CONFIG_HOME/xfce4/xfconf/xfce-perchannel-xml/xfce4-panel.xml" <<'EOF'
<?xml version="1.0" encoding="UTF-8"?>
<channel name="xfce4-panel" version="1.0">
  <property name="configver" type="int" value="2"/>
  <property name="panels" type="array">
    <value type="int" value="1"/>
    <property name="panel-1" type="empty">
      <property name="position" type="string" value="p=6;x=0;y=0"/>
      <property name="length" type="uint" value="100"/>
      <property name="position-locked" type="bool" value="true"/>
      <property name="size" type="uint" value="32"/>
      <property name="plugin-ids" type="array"><value type="int" value="1"/></property>
    </property>
  </property>
  <property name="plugins" type="empty">
    <property name="plugin-1" type="string" value="systray">
      <property name="icon-size" type="uint" value="24"/>
      <property name="square-icons" type="bool" value="true"/>
    </property>
  </property>
</channel>
EOF
say "starting xfconfd and xfce4-panel on $DISPLAY"
"$xfconfd" >"$tmp/xfconfd.log" 2>&1 &
pids+=($!)
has_name() { dbus-send --session --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \
	org.freedesktop.DBus.NameHasOwner "string:$1" 2>/dev/null | grep -q 'boolean true'; }
wait_until 20 "xfconfd" has_name org.xfce.Xfconf
xfce4-panel --disable-wm-check >"$tmp/panel.log" 2>&1 &
pids+=($!)
wait_until 30 "the panel's StatusNotifierWatcher" has_name org.kde.StatusNotifierWatcher

port=18480
while (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do port=$((port + 1)); done
addr=127.0.0.1:$port
# The tray's items registered with the panel's watcher.
tray_items() { dbus-send --session --print-reply --dest=org.kde.StatusNotifierWatcher /StatusNotifierWatcher \
	org.freedesktop.DBus.Properties.Get string:org.kde.StatusNotifierWatcher string:RegisteredStatusNotifierItems 2>/dev/null |
	grep -c 'string "' || true; }
has_tray_item() { [ "$(tray_items)" -gt 0 ]; }
# start_llamatray [ENV=VALUE...] -- [FLAG...]: runs the tray app with those flags added and waits for
# its router and its tray icon; tray is its pid.
tray=""
start_llamatray() {
	local envs=()
	while [ "$1" != "--" ]; do envs+=("$1") && shift; done
	shift
	say "starting llamatray, serving $addr${*:+ with $*}"
	env LLAMATRAY_AUTOSTART=1 "${envs[@]}" "$tmp/llamatray" --addr "$addr" --models-dir "$tmp/models" \
		--llama-server "$tmp/bin/llama-server" --config "$tmp/config.toml" --idle-sleep 1s "$@" >>"$tmp/llamatray.log" 2>&1 &
	tray=$!
	pids+=("$tray")
	wait_until 30 "the router" curl -sf -o /dev/null "http://$addr/models"
	wait_until 30 "the tray icon" has_tray_item
}
start_llamatray --
state() { "$tmp/llamatray" ps --addr "$addr" 2>/dev/null | awk -v id="$1" '$1 == id { print $2 }'; }
is_state() { [ "$(state "$1")" = "$2" ]; }
for m in tiny-alpha tiny-beta; do
	"$tmp/llamatray" load --addr "$addr" "$m" >/dev/null
	wait_until 30 "$m to fall asleep" is_state "$m" sleeping
done
sleep 1 # the tray menu follows within a refresh

mkdir -p "$out"
# shot NAME: waits for the screen to stop changing, then keeps it as OUTDIR/NAME.png.
shot() {
	local last="" n
	for n in $(seq 20); do
		import -window root "$tmp/shot.png"
		sum=$(identify -format '%#' "$tmp/shot.png")
		[ "$sum" = "$last" ] && break
		last=$sum
		sleep 0.3
	done
	cp "$tmp/shot.png" "$out/$1.png"
	say "wrote $out/$1.png"
}
# The menu's rows, from the top of the screen, with GTK's default theme: the panel is 32 px high,
# the menu starts below it and its items are 25 px apart (the first at 48).
row() { echo $((48 + 25 * $1)); }
xdotool mousemove 16 16 click 3
sleep 1
shot xfce-menu
# pixel FILE X Y prints the colour of one pixel.
pixel() { convert "$1" -crop "1x1+$2+$3" -format '%[pixel:p{0,0}]' info:; }
plain=$(pixel "$out/xfce-menu.png" 5 "$(row 5)") # an item that is not hovered
for entry in "1 tiny-alpha" "2 tiny-beta" "3 available"; do
	set -- $entry
	y=$(row "$1")
	# A fresh menu for each (GTK keeps an open submenu while the pointer heads its way), then into
	# the item from the left, in steps, as a hand would.
	xdotool key Escape
	sleep 0.5
	xdotool mousemove 16 16 click 3
	sleep 1
	for x in 10 40 70 100; do
		xdotool mousemove "$x" "$y"
		sleep 0.15
	done
	sleep 1
	shot "xfce-$2"
	if [ "$(pixel "$out/xfce-$2.png" 5 "$y")" = "$plain" ]; then
		say "$2 is not highlighted under the pointer"
		exit 1
	fi
	# The submenu opens to the right of the 235 px wide menu, level with its item.
	if [ "$(convert "$out/xfce-$2.png" -crop 200x30+240+$((y - 15)) -format '%k' info:)" -le 2 ]; then
		say "no submenu drawn for $2"
		exit 1
	fi
done
xdotool key Escape

# Why it waits: one model at a time (--max-loaded 1); tiny-alpha streams a long answer and holds
# the only place while a request for tiny-beta waits, and tiny-beta's label in Available says why.
kill -TERM "$tray"
wait "$tray" 2>/dev/null || true
no_tray_item() { [ "$(tray_items)" -eq 0 ]; }
wait_until 30 "the tray icon to go" no_tray_item
start_llamatray FAKE_LLAMA_TOKENS=100000 FAKE_LLAMA_TOKEN_DELAY=50ms -- --max-loaded 1
# chat MODEL streams an answer of MODEL to nowhere; exec makes $! curl itself, which the cleanup ends.
chat() { exec curl -sN -o /dev/null "http://$addr/v1/chat/completions" -H 'Content-Type: application/json' \
	-d "{\"model\":\"$1\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"; }
# ps prints a waiting model's reason on a line under its row: "  ↳ waiting: …".
reason() { "$tmp/llamatray" ps --addr "$addr" 2>/dev/null | awk -v id="$1" 'prev == id && $1 == "↳" { sub(/^ *↳ /, ""); print } { prev = $1 }'; }
streams() { "$tmp/llamatray" ps --addr "$addr" 2>/dev/null | awk -v id="$1" '$1 == id && $3 > 0 { found = 1 } END { exit !found }'; }
waits() { reason "$1" | grep -q '^waiting: '; }
chat tiny-alpha &
pids+=($!)
wait_until 30 "tiny-alpha to stream" streams tiny-alpha
chat tiny-beta &
pids+=($!)
wait_until 30 "tiny-beta to wait" waits tiny-beta
say "tiny-beta $(reason tiny-beta)"
sleep 1 # the tray menu follows within a refresh
xdotool mousemove 16 16 click 3
sleep 1
for x in 10 40 70 100; do
	xdotool mousemove "$x" "$(row 2)"
	sleep 0.15
done
sleep 1
shot xfce-waiting
if [ "$(pixel "$out/xfce-waiting.png" 5 "$(row 2)")" = "$plain" ]; then
	say "Available is not highlighted under the pointer"
	exit 1
fi
# The submenu opens to the right of the menu, which tiny-alpha's label widened, and its first
# label is the long reason: text far to the right.
if [ "$(convert "$out/xfce-waiting.png" -crop 300x30+700+$(($(row 2) - 15)) -format '%k' info:)" -le 2 ]; then
	say "no waiting label drawn in Available"
	exit 1
fi
xdotool key Escape
if grep -q "Children but no menu\|LIBDBUSMENU.*WARNING" "$tmp/panel.log"; then
	say "libdbusmenu-gtk warned:"
	grep "LIBDBUSMENU" "$tmp/panel.log" >&2
	exit 1
fi
say "every submenu drawn; libdbusmenu-gtk did not warn"
