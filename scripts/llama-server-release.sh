#!/usr/bin/env bash
# Gets llama.cpp's own release build of llama-server for this machine the way a user does, with
# Llamatray itself (`llamatray llama-server install`: the latest release's asset for this system,
# its sha256 checked, unpacked into <data dir>/llama-server/): Metal on macOS arm64, the CPU build
# elsewhere. Prints the path of the llama-server it installed (for LLAMA_SERVER). Used by the hosted
# CI (.github/workflows/ci.yml, `make e2e-release`); works on Linux, macOS and Windows (Git Bash).
#
# Environment:
#   LLAMA_BACKEND   the backend to install (default: metal on macOS arm64, else cpu)
#   GITHUB_TOKEN    not read by Llamatray; LLAMATRAY_RELEASES_URL may point at a mirror
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
log() { echo "llama-server-release: $*" >&2; }

exe=build/ci/llamatray
case "$(uname -s)" in MINGW* | MSYS* | CYGWIN*) exe+=.exe ;; esac
backend="${LLAMA_BACKEND:-}"
if [[ -z "$backend" ]]; then
	backend=cpu
	[[ "$(uname -s)" == Darwin && "$(uname -m)" == arm64 ]] && backend=metal
fi
CGO_ENABLED=0 go build -tags headless -o "$exe" .
log "installing llama.cpp's latest $backend build"
out="$("$exe" llama-server install --backend "$backend")"
echo "$out" >&2
# "installed llama.cpp BUILD (BACKEND), version V" is followed by the path; a build already there
# is the one `list` shows in use.
path="$(awk '/^installed llama.cpp/ {getline; sub(/^ +/, ""); print; exit}' <<<"$out")"
[[ -n "$path" ]] || path="$("$exe" llama-server list | sed -n 's/^in use: \(.*\) ([^()]*)$/\1/p')"
[[ -n "$path" ]] || {
	"$exe" llama-server list >&2
	log "error: no llama-server in use after the install"
	exit 1
}
"$path" --version >&2
echo "$path"
