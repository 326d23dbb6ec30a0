#!/usr/bin/env bash
# screenshot.sh OUT.png takes a picture of the models window of the real llamatray, for the docs.
#
# It builds llamatray and the fake llama-server, writes four header-only models (sparse files of
# real models' sizes that take no disk), and runs the app on a private Xvfb display (1280x800) and
# D-Bus session bus (scripts/with-desktop.sh) with its own HOME and XDG dirs, so it never meets the
# user's Llamatray, config or files. One model is loaded with two chat streams running, another
# has gone to sleep; then a second launch opens the first one's window, and once the window is
# drawn and steady it is captured to OUT.png. Everything is stopped and removed afterwards.
#
# Needs: go, curl, Xvfb, dbus-daemon, xdotool, ImageMagick (import, identify).
set -euo pipefail

if [ $# -ne 1 ]; then
	echo "usage: $0 OUT.png" >&2
	exit 2
fi
out=$1
case $out in /*) ;; *) out="$PWD/$out" ;; esac
root=$(cd "$(dirname "$0")/.." && pwd)

if [ -z "${LLAMATRAY_SCREENSHOT_DESKTOP:-}" ]; then
	for tool in go curl Xvfb dbus-daemon xdotool import identify; do
		if ! command -v "$tool" >/dev/null 2>&1; then
			echo "screenshot: $tool not found (Debian/Ubuntu: apt-get install xvfb dbus xdotool imagemagick curl)" >&2
			exit 127
		fi
	done
	# Run again inside a private desktop.
	LLAMATRAY_SCREENSHOT_DESKTOP=1 WITH_DESKTOP_SCREEN=1280x800x24 exec "$root/scripts/with-desktop.sh" "$0" "$out"
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/llamatray-screenshot.XXXXXX")
app_pid=""
streams=()
cleanup() {
	local rc=$?
	for p in "${streams[@]}"; do kill "$p" 2>/dev/null || true; done
	if [ -n "$app_pid" ] && kill -0 "$app_pid" 2>/dev/null; then
		kill -TERM "$app_pid" 2>/dev/null || true
		wait "$app_pid" 2>/dev/null || true
	fi
	for p in "${streams[@]}"; do wait "$p" 2>/dev/null || true; done
	if [ "$rc" -ne 0 ] && [ -f "$tmp/llamatray.log" ]; then
		echo "screenshot: llamatray's log:" >&2
		tail -n 40 "$tmp/llamatray.log" >&2
	fi
	if [ -n "${LLAMATRAY_SCREENSHOT_KEEP:-}" ]; then cp "$tmp/llamatray.log" "$LLAMATRAY_SCREENSHOT_KEEP"; fi
	rm -rf "$tmp"
}
trap cleanup EXIT

log_name=screenshot
# shellcheck source=scripts/lib-desktop.sh
. "$root/scripts/lib-desktop.sh"
still_alive() {
	if [ -n "$app_pid" ] && ! kill -0 "$app_pid" 2>/dev/null; then
		say "llamatray exited"
		return 1
	fi
}

cd "$root"
build_app "$tmp"

# Real models' shapes (parameter counts); the files are sparse. The tensors are declared F16, so
# the sizes are two bytes per parameter whatever the quantization in the name says.
go run ./router/testbed/fakemodels "$tmp/models" >/dev/null <<'EOF'
# name                           arch    blocks embd ffn   heads kv vocab  file_type context
qwen2.5-7b-instruct-q4_k_m       qwen2   28     3584 18944 28    4  152064 15        32768
llama-3.2-3b-instruct-q8_0       llama   28     3072 8192  24    8  128256 7         131072
gemma-3-4b-it-q4_k_m             gemma3  34     2560 10240 8     4  262144 15        131072
mistral-nemo-12b-instruct-q5_k_m llama   40     5120 14336 32    8  131072 17        131072
EOF
busy=llama-3.2-3b-instruct-q8_0
asleep=gemma-3-4b-it-q4_k_m
# The fake llama-server's knobs: memory it really holds while awake, and slow endless streams.
cat >"$tmp/models/$busy.gguf.fake.json" <<'EOF'
{"hold_mb": 3300, "load_time": "400ms", "token_delay": "120ms", "tokens": 1000000}
EOF
cat >"$tmp/models/$asleep.gguf.fake.json" <<'EOF'
{"hold_mb": 300, "load_time": "400ms"}
EOF

port=18080
while (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do port=$((port + 1)); done
addr=127.0.0.1:$port
base=http://$addr

for d in home config data cache state run; do mkdir -p "$tmp/$d" && chmod 700 "$tmp/$d"; done
export HOME="$tmp/home" XDG_CONFIG_HOME="$tmp/config" XDG_DATA_HOME="$tmp/data" XDG_CACHE_HOME="$tmp/cache" \
	XDG_STATE_HOME="$tmp/state" XDG_RUNTIME_DIR="$tmp/run"
unset WAYLAND_DISPLAY
args=(--addr "$addr" --models-dir "$tmp/models" --llama-server "$tmp/bin/llama-server" --config "$tmp/config.toml"
	--memory-limit 24GiB --idle-sleep 3s)

say "starting llamatray on $DISPLAY, serving $addr"
# Started as at login, so the window opens only when the second launch asks for it.
LLAMATRAY_AUTOSTART=1 "$tmp/llamatray" "${args[@]}" >"$tmp/llamatray.log" 2>&1 &
app_pid=$!
wait_until 30 "the router" curl -sf -o /dev/null "$base/models"

# state ID prints "STATE ACTIVE" from `llamatray ps`.
state() { "$tmp/llamatray" ps --addr "$addr" | awk -v id="$1" '$1 == id { print $2, $3 }'; }
is_state() { [ "$(state "$1")" = "$2" ]; }

say "loading $asleep and letting it go to sleep"
"$tmp/llamatray" load --addr "$addr" "$asleep" >/dev/null
wait_until 30 "$asleep to sleep" is_state "$asleep" "sleeping 0"

say "two chat streams on $busy"
for prompt in "Tell me a long story about a lighthouse keeper." "Explain how a transformer works, step by step."; do
	curl -sN "$base/v1/chat/completions" -H 'Content-Type: application/json' \
		-d "{\"model\": \"$busy\", \"stream\": true, \"messages\": [{\"role\": \"user\", \"content\": \"$prompt\"}]}" \
		>/dev/null &
	streams+=($!)
done
wait_until 30 "$busy to be loaded with 2 active requests" is_state "$busy" "loaded 2"

say "opening the models window with a second launch"
"$tmp/llamatray" "${args[@]}" >>"$tmp/llamatray.log" 2>&1
find_window() { wid=$(xdotool search --onlyvisible --name '^Llamatray$' 2>/dev/null | head -n 1) && [ -n "$wid" ]; }
wait_until 30 "the models window to be mapped" find_window
# Tall enough for all four models (there is no window manager to place or size it).
xdotool windowsize "$wid" 920 680

# Drawn and steady: many colours (not a blank frame) and the same picture twice in a row.
drawn() {
	import -window "$wid" "$tmp/shot.png" 2>/dev/null || return 1
	steady "$tmp/shot.png"
}
wait_until 30 "the models window to be drawn" drawn
mkdir -p "$(dirname "$out")"
cp "$tmp/shot.png" "$out"
say "wrote $out ($(identify -format '%wx%h' "$out"))"
