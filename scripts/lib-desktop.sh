# Sourced by the scripts that drive the real app on a private desktop (screenshot.sh,
# xfce-tray-shot.sh, machines-shot.sh): messages, waiting for a condition, a steady picture, and
# building what they run.
#
# The sourcing script sets log_name (how its messages start), and may define still_alive, which
# wait_until calls between polls: when it fails (and says why), the wait ends at once.

say() { echo "${log_name}: [${SECONDS}s] $*" >&2; }

# wait_until TIMEOUT WHAT CMD...: polls CMD every 0.2 s until it succeeds; fails after TIMEOUT
# seconds, or as soon as still_alive fails.
wait_until() {
	local timeout=$1 what=$2
	shift 2
	local deadline=$((SECONDS + timeout))
	until "$@"; do
		if declare -F still_alive >/dev/null && ! still_alive; then
			say "gave up waiting for $what"
			return 1
		fi
		if [ "$SECONDS" -ge "$deadline" ]; then
			say "timed out after ${timeout}s waiting for $what"
			return 1
		fi
		sleep 0.2
	done
}

# steady PNG: the picture is drawn (more than 64 colours, not a blank frame) and the same as the one
# steady was given before; otherwise it remembers this one, waits half a second and fails, so that
# `wait_until 30 WHAT capture_then_steady` waits for a window that stopped changing.
steady_last=""
steady() {
	local colours sum
	colours=$(identify -format '%k' "$1")
	sum=$(identify -format '%#' "$1")
	if [ "$colours" -gt 64 ] && [ "$sum" = "$steady_last" ]; then
		return 0
	fi
	steady_last=$sum
	sleep 0.5
	return 1
}

# build_app DIR: llamatray as DIR/llamatray and the fake llama-server as DIR/bin/llama-server, from
# the repository the current directory is.
build_app() {
	say "building llamatray and the fake llama-server"
	go build -o "$1/llamatray" .
	mkdir -p "$1/bin"
	go build -o "$1/bin/llama-server" ./router/testbed/fakellama
}
