#!/usr/bin/env bash
# Compiles llamatray.exe's Windows resources (icon, manifest, version information) into a .syso
# object for `go build`: build-exe.sh and the release configuration (.goreleaser.yaml) both use it.
#
# Usage: packaging/windows/build-syso.sh VERSION OUT.syso
# Environment:
#   WINDRES  resource compiler (default x86_64-w64-mingw32-windres, else windres)
# shellcheck source-path=SCRIPTDIR
set -euo pipefail
SCRIPT_NAME="build-syso"
# shellcheck source=../common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common.sh"

[[ $# -eq 2 ]] || die "usage: $0 VERSION OUT.syso"
VERSION="$(plain_version "$1")"
NUMVER="$(numeric_version "$VERSION")"
mkdir -p "$(dirname "$2")"
OUT="$(abs_path "$2")"

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
WINDRES="${WINDRES:-$(pick x86_64-w64-mingw32-windres windres)}"

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
make_ico "$(app_icon "$WORK")" "$WORK/llamatray.ico"
sed "s/@NUMVER@/$NUMVER/" "$PACKAGING_DIR/windows/llamatray.exe.manifest" >"$WORK/llamatray.exe.manifest"
sed -e "s/@VERSION@/$VERSION/g" -e "s/@NUMVER_COMMAS@/${NUMVER//./,}/g" \
	"$PACKAGING_DIR/windows/llamatray.rc.in" >"$WORK/llamatray.rc"
(cd "$WORK" && "$WINDRES" --target=pe-x86-64 -O coff -i llamatray.rc -o rsrc.syso)
mv "$WORK/rsrc.syso" "$OUT"
log "wrote $OUT"
echo "$OUT"
