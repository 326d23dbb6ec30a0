#!/usr/bin/env bash
# with-desktop.sh CMD [ARG...] runs CMD inside a private headless desktop: an Xvfb X server on a
# free display and a private D-Bus session bus. DISPLAY and DBUS_SESSION_BUS_ADDRESS are exported
# for CMD; both servers are stopped afterwards, whatever happens. The exit code is CMD's.
#
#   scripts/with-desktop.sh go test ./app/...
#   WITH_DESKTOP_SCREEN=1920x1080x24 scripts/with-desktop.sh ./llamatray
#
# Needs Xvfb (Debian: xvfb) and dbus-daemon (Debian: dbus).
set -euo pipefail

if [ $# -eq 0 ]; then
	echo "usage: $0 CMD [ARG...]" >&2
	exit 2
fi
for tool in Xvfb dbus-daemon; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "with-desktop: $tool not found (Debian/Ubuntu: apt-get install xvfb dbus)" >&2
		exit 127
	fi
done

screen=${WITH_DESKTOP_SCREEN:-1280x800x24}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/with-desktop.XXXXXX")
xvfb_pid=""
dbus_pid=""

stop() {
	local pid=$1
	[ -n "$pid" ] || return 0
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
	stop "$xvfb_pid"
	stop "$dbus_pid"
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# start_xvfb N: starts Xvfb on :N and waits until it accepts connections (Xvfb writes the display
# number to -displayfd once it is ready). Fails when Xvfb exits first, e.g. :N was taken meanwhile.
start_xvfb() {
	local n=$1 ready="$tmp/xvfb-ready.$1" got=""
	mkfifo "$ready"
	Xvfb ":$n" -screen 0 "$screen" -nolisten tcp -displayfd 3 3>"$ready" >"$tmp/xvfb.log" 2>&1 &
	xvfb_pid=$!
	if read -r -t 30 got <"$ready" && [ "$got" = "$n" ]; then
		return 0
	fi
	stop "$xvfb_pid"
	xvfb_pid=""
	return 1
}

# A display is free when neither its socket nor its lock file exists.
display=""
for n in $(seq 90 190); do
	if [ -e "/tmp/.X11-unix/X$n" ] || [ -e "/tmp/.X$n-lock" ]; then
		continue
	fi
	if start_xvfb "$n"; then
		display=":$n"
		break
	fi
done
if [ -z "$display" ]; then
	echo "with-desktop: could not start Xvfb on any display in :90-:190" >&2
	cat "$tmp/xvfb.log" >&2 2>/dev/null || true
	exit 1
fi

# A private session bus: its own socket, no service activation, everything allowed.
cat >"$tmp/bus.conf" <<EOF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path=$tmp/bus</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
EOF
mkfifo "$tmp/bus-ready"
dbus-daemon --config-file="$tmp/bus.conf" --nofork --print-address=3 3>"$tmp/bus-ready" >"$tmp/dbus.log" 2>&1 &
dbus_pid=$!
bus=""
if ! read -r -t 30 bus <"$tmp/bus-ready" || [ -z "$bus" ]; then
	echo "with-desktop: dbus-daemon did not start" >&2
	cat "$tmp/dbus.log" >&2 2>/dev/null || true
	exit 1
fi

export DISPLAY="$display" DBUS_SESSION_BUS_ADDRESS="$bus"
set +e
"$@"
rc=$?
set -e
exit "$rc"
