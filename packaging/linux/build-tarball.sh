#!/usr/bin/env bash
# Builds the generic Linux archive of Llamatray: llamatray-<version>-linux-<arch>.tar.xz with
# llamatray at its top, share/{applications,icons,metainfo,man} as they go under a prefix, and a
# Makefile whose install / user-install targets copy them into place. `make release-snapshot`
# makes the same archive with GoReleaser from the files tarball_extras stages.
#
# Usage: packaging/linux/build-tarball.sh VERSION BINARY OUTDIR
# shellcheck source-path=SCRIPTDIR
set -euo pipefail
SCRIPT_NAME="build-tarball"
# shellcheck source=../common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common.sh"
# shellcheck source=files.sh
source "$PACKAGING_DIR/linux/files.sh"

[[ $# -eq 3 ]] || die "usage: $0 VERSION BINARY OUTDIR"
VERSION="$(plain_version "$1")"
BINARY="$2"
OUTDIR="$3"
need tar xz file gzip install
[[ -f "$BINARY" && -x "$BINARY" ]] || die "$BINARY is not an executable file"

case "$(file -bL "$BINARY")" in
*x86-64*) ARCH=amd64 ;;
*aarch64*) ARCH=arm64 ;;
*) die "$BINARY is not a Linux x86-64 or arm64 executable: $(file -bL "$BINARY")" ;;
esac
check_linux_binary "$BINARY" "$ARCH"

mkdir -p "$OUTDIR"
OUTDIR="$(cd "$OUTDIR" && pwd)"
WORK="$(mktemp -d "$OUTDIR/.tar-build.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
umask 022

NAME="$APP_BIN-$VERSION-linux-$ARCH"
TOP="$WORK/$NAME"
install -D -m 0755 "$BINARY" "$TOP/$APP_BIN"
tarball_extras "$TOP" "$VERSION" "$ARCH" "$WORK"

TARBALL="$OUTDIR/$NAME.tar.xz"
MTIME="@${SOURCE_DATE_EPOCH:-$(date +%s)}"
tar -C "$WORK" --sort=name --owner=0 --group=0 --numeric-owner --mtime="$MTIME" \
	-cf - "$NAME" | xz -9 -T1 >"$TARBALL"
log "wrote $TARBALL ($(stat -c %s "$TARBALL") bytes)"
echo "$TARBALL"
