#!/usr/bin/env bash
# Builds llamatray.exe for Windows x86-64 with its icon, manifest and version information.
# Works on Linux (cross-compiling with MinGW-w64) and on Windows (Git Bash or MSYS2, with
# MinGW-w64's gcc and windres on PATH).
#
# Usage: packaging/windows/build-exe.sh VERSION OUT.exe
# Environment:
#   COMMIT   commit shown by `llamatray version` (default: git rev-parse --short HEAD)
#   CC       C compiler for cgo (default x86_64-w64-mingw32-gcc, else gcc)
#   WINDRES  resource compiler (see build-syso.sh)
#
# The resources are compiled by build-syso.sh into a .syso that is copied into the main package folder only
# for the `go build` and removed afterwards, also when the build fails.
# shellcheck source-path=SCRIPTDIR
set -euo pipefail
SCRIPT_NAME="build-exe"
# shellcheck source=../common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common.sh"

[[ $# -eq 2 ]] || die "usage: $0 VERSION OUT.exe"
VERSION="$(plain_version "$1")"
mkdir -p "$(dirname "$2")"
OUT="$(abs_path "$2")"
need go

pick() { # pick CANDIDATE...: the first command found
	local c
	for c in "$@"; do
		if command -v "$c" >/dev/null 2>&1; then
			echo "$c"
			return
		fi
	done
	die "none of $* is installed (Debian/Ubuntu: apt-get install gcc-mingw-w64-x86-64)"
}
CC="${CC:-$(pick x86_64-w64-mingw32-gcc gcc)}"
COMMIT="${COMMIT:-$(git -C "$REPO_ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)}"

SYSO="$REPO_ROOT/zz_packaging_rsrc_windows_amd64.syso"
[[ ! -e "$SYSO" ]] || die "$SYSO exists: another build-exe.sh is running, or an earlier one was killed (then delete it)"
WORK="$(mktemp -d)"
cleanup() {
	rm -f "$SYSO"
	rm -rf "$WORK"
}
trap cleanup EXIT

"$PACKAGING_DIR/windows/build-syso.sh" "$VERSION" "$WORK/rsrc.syso" >/dev/null

cp "$WORK/rsrc.syso" "$SYSO"
log "building $OUT ($VERSION, commit $COMMIT) with $CC"
(cd "$REPO_ROOT" && CGO_ENABLED=1 CC="$CC" GOOS=windows GOARCH=amd64 \
	go build -trimpath -ldflags "-H=windowsgui -s -w -X main.version=$VERSION -X main.commit=$COMMIT" \
	-o "$(native_path "$OUT")" .)
rm -f "$SYSO"

if command -v file >/dev/null 2>&1; then
	desc="$(file -b "$OUT")"
	[[ "$desc" == PE32+* ]] || die "$OUT is not a 64-bit Windows executable: $desc"
fi
log "wrote $OUT ($(wc -c <"$OUT" | tr -d ' ') bytes)"
echo "$OUT"
