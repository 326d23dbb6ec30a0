#!/usr/bin/env bash
# idle-cost.sh BINARY [SECONDS] measures what an idle desktop app costs: it starts BINARY (a
# llamatray build) as at login (window closed, one model found and none loaded, the fake
# llama-server; a private X server and session bus through with-desktop.sh), lets it settle, then
# reads /proc/PID/stat (utime+stime) and VmRSS over SECONDS (default 60) and prints the CPU share
# of one core and the resident memory. Needs go (it builds the fake llama-server and the model).
#
#   go build -o /tmp/llamatray . && scripts/idle-cost.sh /tmp/llamatray 60
#
# IDLE_SETTLE (seconds, default 10) is the wait before measuring. IDLE_OPEN=1 opens the window
# first (a second launch asks the first to show it), to measure the idle app with its window open.
# IDLE_LOAD=1 loads the model first (it stays loaded and idle), to measure an app with a model.
set -euo pipefail

if [ $# -lt 1 ]; then
	echo "usage: $0 BINARY [SECONDS]" >&2
	exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
secs=${2:-60}
settle=${IDLE_SETTLE:-10}

if [ -z "${DBUS_SESSION_BUS_ADDRESS:-}" ] || [ -z "${DISPLAY:-}" ] || [ -z "${IDLE_IN_DESKTOP:-}" ]; then
	IDLE_IN_DESKTOP=1 exec "$here/with-desktop.sh" "$0" "$bin" "$secs"
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/idle-cost.XXXXXX")
pid=""
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
	if [ -n "$pid" ]; then
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
mkdir -p "$tmp/models" "$tmp/config" "$tmp/data" "$tmp/cache" "$tmp/state" "$tmp/run" "$tmp/bin"
chmod 700 "$tmp/run"
(cd "$here/.." && go build -o "$tmp/bin/llama-server" ./router/testbed/fakellama &&
	echo "tiny llama 2 64 256 4 4 1000 1 4096" | go run ./router/testbed/fakemodels "$tmp/models" >/dev/null)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
args=(--addr "127.0.0.1:$port" --models-dir "$tmp/models" --llama-server "$tmp/bin/llama-server" --config "$tmp/config/config.toml")
export XDG_CONFIG_HOME="$tmp/config" XDG_DATA_HOME="$tmp/data" XDG_CACHE_HOME="$tmp/cache" \
	XDG_STATE_HOME="$tmp/state" XDG_RUNTIME_DIR="$tmp/run" LLAMATRAY_AUTOSTART=1
"$bin" "${args[@]}" >"$tmp/app.log" 2>&1 &
pid=$!
sleep "$settle"
if [ "${IDLE_LOAD:-}" = 1 ]; then
	"$bin" load --addr "127.0.0.1:$port" tiny >/dev/null
	sleep "$settle"
fi
if [ "${IDLE_OPEN:-}" = 1 ]; then
	"$bin" "${args[@]}" >/dev/null 2>&1
	sleep "$settle"
fi
kill -0 "$pid" || { echo "the app exited:" >&2; cat "$tmp/app.log" >&2; exit 1; }

ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
rss() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }
hz=$(getconf CLK_TCK)
t0=$(ticks "$pid")
s0=$(date +%s.%N)
peak=0
for _ in $(seq "$secs"); do
	sleep 1
	r=$(rss "$pid")
	[ "$r" -gt "$peak" ] && peak=$r
done
t1=$(ticks "$pid")
s1=$(date +%s.%N)
awk -v d="$((t1 - t0))" -v hz="$hz" -v s0="$s0" -v s1="$s1" -v r="$(rss "$pid")" -v p="$peak" 'BEGIN {
	printf "cpu %.2f%% of one core over %.0f s (%d ticks at %d Hz); VmRSS %.1f MB now, %.1f MB peak\n",
		100 * d / hz / (s1 - s0), s1 - s0, d, hz, r / 1000, p / 1000
}'
