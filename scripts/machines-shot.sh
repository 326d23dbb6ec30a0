#!/usr/bin/env bash
# machines-shot.sh OUTDIR takes a picture of the models window's Other machines section of the real
# llamatray, on real pieces, as OUTDIR/other-machines-real.png:
#
#   - a peer: `llamatray serve` with one tiny model (desk);
#   - two workers: `llamatray worker` with llama.cpp's real ggml-rpc-server (a, and b, which the
#     desktop app is given a wrong token for, so it refuses it);
#   - the desktop app on a private Xvfb display and D-Bus session bus (scripts/with-desktop.sh), with
#     [peers.desk], [workers.a], [workers.b], a model "big" spread over worker a (gpu_layers 99), and
#     lend = true on a loopback port.
#
# Every one runs on loopback ports with its own HOME and XDG dirs. The models are tiny runnable
# random-weight GGUFs (router/testbed/ggufwrite's mkgguf), served by the real llama-server. Once a
# chat of "big" has answered, so that worker a shows its RPC0 memory and "used by big", a second
# launch opens the window and, once it is drawn and steady, the screen is captured with
# `import -window root` and cut to the window. Everything started is stopped by its pid at exit.
#
# LLAMA_SERVER is llama.cpp's llama-server (default: `make llama-server`'s, whose ggml-rpc-server is
# beside it; GGML_RPC_SERVER overrides that); LLAMATRAY_BIN reuses a built llamatray (`make build`).
#
# Needs: go, curl, python3-dbus and python3-gi (a minimal tray host), Xvfb, dbus-daemon, xdotool, ImageMagick (import, identify, convert), jq.
set -euo pipefail

if [ $# -ne 1 ]; then
	echo "usage: $0 OUTDIR" >&2
	exit 2
fi
out=$1
case $out in /*) ;; *) out="$PWD/$out" ;; esac
root=$(cd "$(dirname "$0")/.." && pwd)
llama=${LLAMA_SERVER:-${LLAMATRAY_CACHE:-$HOME/.cache/llamatray-dev}/llama-server/bin/llama-server}
rpc=${GGML_RPC_SERVER:-$(dirname "$llama")/ggml-rpc-server}

# tray_python prints a python3 that has dbus-python and gi (GLib's main loop), for the tray host.
tray_python() {
	local py
	for py in python3 /usr/bin/python3; do
		if "$py" -c 'import dbus, dbus.mainloop.glib, gi' 2>/dev/null; then
			command -v "$py"
			return
		fi
	done
}

if [ -z "${LLAMATRAY_MACHINES_DESKTOP:-}" ]; then
	for tool in go curl jq Xvfb dbus-daemon xdotool import identify convert; do
		if ! command -v "$tool" >/dev/null 2>&1; then
			echo "machines-shot: $tool not found (Debian/Ubuntu: apt-get install xvfb dbus xdotool imagemagick curl jq)" >&2
			exit 127
		fi
	done
	if [ -z "$(tray_python)" ]; then
		echo "machines-shot: no python3 with dbus and gi, for the tray host (Debian/Ubuntu: apt-get install python3-dbus python3-gi)" >&2
		exit 127
	fi
	for f in "$llama" "$rpc"; do
		if [ ! -x "$f" ]; then
			echo "machines-shot: $f not found (make llama-server, or set LLAMA_SERVER and GGML_RPC_SERVER)" >&2
			exit 127
		fi
	done
	# Run again inside a private desktop.
	LLAMA_SERVER=$llama GGML_RPC_SERVER=$rpc LLAMATRAY_MACHINES_DESKTOP=1 WITH_DESKTOP_SCREEN=1280x900x24 \
		exec "$root/scripts/with-desktop.sh" "$0" "$out"
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/llamatray-machines.XXXXXX")
pids=()
cleanup() {
	local rc=$?
	for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
		kill -TERM "${pids[i]}" 2>/dev/null || true
		wait "${pids[i]}" 2>/dev/null || true
	done
	if [ "$rc" -ne 0 ]; then
		for f in "$tmp"/*.log; do
			[ -f "$f" ] && { echo "machines-shot: $(basename "$f"):" >&2; tail -n 30 "$f" >&2; }
		done
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
# shellcheck disable=SC2034 # lib-desktop.sh's say uses it
log_name=machines-shot
# shellcheck source=scripts/lib-desktop.sh
. "$root/scripts/lib-desktop.sh"

cd "$root"
bin=${LLAMATRAY_BIN:-}
if [ -z "$bin" ]; then
	say "building llamatray"
	go build -o "$tmp/llamatray" .
	bin=$tmp/llamatray
fi
# model DIR NAME: a tiny runnable random-weight model DIR/NAME.gguf.
model() {
	mkdir -p "$1"
	go run ./router/testbed/ggufwrite/cmd/mkgguf -o "$1/$2.gguf" -width 64 -blocks 4 -name "$2" >/dev/null
}
say "writing the models"
model "$tmp/peer/models" tiny-chat
model "$tmp/desk/models" big

# free_port VAR FROM: sets VAR to the first port from FROM on that nothing on 127.0.0.1 listens on,
# and not one handed out before.
taken=" "
free_port() {
	local p=$2
	while [[ $taken == *" $p "* ]] || listens "$p"; do p=$((p + 1)); done
	taken+="$p "
	printf -v "$1" %s "$p"
}
listens() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
# private NAME: penv is HOME and XDG dirs of its own under $tmp/NAME, for env.
penv=()
private() {
	local d
	for d in home config data cache state run; do mkdir -p "$tmp/$1/$d" && chmod 700 "$tmp/$1/$d"; done
	penv=(HOME="$tmp/$1/home" XDG_CONFIG_HOME="$tmp/$1/config" XDG_DATA_HOME="$tmp/$1/data"
		XDG_CACHE_HOME="$tmp/$1/cache" XDG_STATE_HOME="$tmp/$1/state" XDG_RUNTIME_DIR="$tmp/$1/run")
}
# start NAME [ENV=VALUE...] CMD...: runs CMD in the background with NAME's own dirs and the ENVs, its
# output in $tmp/NAME.log; pid is its pid, which the cleanup stops.
pid=""
start() {
	local name=$1
	shift
	private "$name"
	env -u WAYLAND_DISPLAY "${penv[@]}" "$@" >>"$tmp/$name.log" 2>&1 &
	pid=$!
	pids+=("$pid")
}

# A minimal tray host: a StatusNotifierWatcher that takes every icon, so the window does not say
# that no tray shows Llamatray (nothing draws the icon; the window is what is captured).
cat >"$tmp/watcher.py" <<'EOF'
import dbus, dbus.service, dbus.mainloop.glib
from gi.repository import GLib

IFACE = "org.kde.StatusNotifierWatcher"

class Watcher(dbus.service.Object):
    @dbus.service.method(IFACE, in_signature="s", sender_keyword="sender")
    def RegisterStatusNotifierItem(self, service, sender=None):
        pass

    @dbus.service.method(IFACE, in_signature="s")
    def RegisterStatusNotifierHost(self, service):
        pass

dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
bus = dbus.SessionBus()
name = dbus.service.BusName(IFACE, bus, do_not_queue=True)
Watcher(bus, "/StatusNotifierWatcher")
GLib.MainLoop().run()
EOF
"$(tray_python)" "$tmp/watcher.py" >"$tmp/watcher.log" 2>&1 &
pids+=($!)
has_watcher() { dbus-send --session --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \
	org.freedesktop.DBus.NameHasOwner string:org.kde.StatusNotifierWatcher 2>/dev/null | grep -q 'boolean true'; }
wait_until 20 "the tray host" has_watcher

peer_port="" port_a="" port_b="" desk_port="" lend_port=""
free_port peer_port 18680
say "starting the peer on 127.0.0.1:$peer_port"
start peer "$bin" serve --addr "127.0.0.1:$peer_port" --models-dir "$tmp/peer/models" --llama-server "$llama" \
	--config "$tmp/peer/config.toml"
wait_until 30 "the peer" curl -sf -o /dev/null "http://127.0.0.1:$peer_port/models"

token=machines-shot-token-0123456789-abcdef
free_port port_a 18750
free_port port_b 18750
start_worker() {
	say "starting worker $1 on 127.0.0.1:$2"
	start "worker-$1" "$bin" worker --listen "127.0.0.1:$2" --token "$token" --rpc-server "$rpc" --threads 1 --name "$1"
	wait_until 30 "worker $1" listens "$2"
}
start_worker a "$port_a"
start_worker b "$port_b"

free_port desk_port 18780
free_port lend_port 18790
addr=127.0.0.1:$desk_port
cat >"$tmp/desk/config.toml" <<EOF
lend = true
lend_listen = "127.0.0.1:$lend_port"

[peers.desk]
url = "http://127.0.0.1:$peer_port"

[workers.a]
address = "127.0.0.1:$port_a"
token = "$token"

[workers.b]
address = "127.0.0.1:$port_b"
token = "not-the-token-0123456789-abcdefghij"

[models."big"]
workers = ["a"]
gpu_layers = 99
EOF
args=(--addr "$addr" --models-dir "$tmp/desk/models" --llama-server "$llama" --config "$tmp/desk/config.toml")
say "starting llamatray on $DISPLAY, serving $addr"
# Started as at login, so the window opens only when the second launch asks for it.
start desk LLAMATRAY_AUTOSTART=1 "$bin" "${args[@]}"
app_pid=$pid
still_alive() {
	if ! kill -0 "$app_pid" 2>/dev/null; then
		say "llamatray exited"
		return 1
	fi
}
wait_until 30 "the router" curl -sf -o /dev/null "http://$addr/models"

# jqs FILTER: jq -e FILTER on GET /api/status.
jqs() { curl -sf "http://$addr/api/status" | jq -e "$1" >/dev/null; }
say "a chat of big, over worker a"
if ! curl -sS -o "$tmp/chat.json" -w '%{http_code}\n' "http://$addr/v1/chat/completions" -H 'Content-Type: application/json' \
	-d '{"model": "big", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]}' >"$tmp/chat.code" ||
	[ "$(cat "$tmp/chat.code")" != 200 ]; then
	say "the chat of big failed ($(cat "$tmp/chat.code")): $(cat "$tmp/chat.json" 2>/dev/null)"
	exit 1
fi
wait_until 30 "worker a to show its device and big" \
	jqs '.workers[] | select(.name == "a") | .state == "up" and .model == "big" and (.devices | length) > 0'
wait_until 30 "worker b to refuse" jqs '.workers[] | select(.name == "b") | .state == "refused"'
wait_until 30 "the peer's model" jqs '.peers[] | select(.name == "desk") | .state == "up"'
wait_until 30 "lending to be on" jqs '.lending.state == "on"'

say "opening the models window with a second launch"
private desk
env -u WAYLAND_DISPLAY "${penv[@]}" "$bin" "${args[@]}" >>"$tmp/desk.log" 2>&1
find_window() { wid=$(xdotool search --onlyvisible --name '^Llamatray$' 2>/dev/null | head -n 1) && [ -n "$wid" ]; }
wait_until 30 "the models window to be mapped" find_window
# Tall enough for Other machines and the model (there is no window manager to place or size it).
xdotool windowmove "$wid" 0 0 windowsize "$wid" 1000 680

# Drawn and steady: many colours (not a blank frame) and the same picture twice in a row. The
# screen is captured and cut to the window.
drawn() {
	local geo
	geo=$(xdotool getwindowgeometry --shell "$wid" | awk -F= '{ v[$1] = $2 } END { printf "%dx%d+%d+%d", v["WIDTH"], v["HEIGHT"], v["X"], v["Y"] }')
	import -window root "$tmp/root.png" 2>/dev/null || return 1
	convert "$tmp/root.png" -crop "$geo" +repage "$tmp/shot.png"
	steady "$tmp/shot.png"
}
wait_until 30 "the models window to be drawn" drawn
mkdir -p "$out"
cp "$tmp/shot.png" "$out/other-machines-real.png"
say "wrote $out/other-machines-real.png ($(identify -format '%wx%h' "$out/other-machines-real.png"))"
