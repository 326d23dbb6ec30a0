#!/usr/bin/env bash
# Builds the generic Linux archive of Llamatray: llamatray-<version>-linux-<arch>.tar.xz with
# the same layout as `fyne package` (usr/local/bin, usr/local/share/{applications,icons,...})
# and a Makefile whose install / user-install targets copy it into place.
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
install_linux_files "$TOP" /usr/local "$BINARY" "$WORK"
install -m 0644 "$PACKAGING_DIR/linux/tarball.mk" "$TOP/Makefile"
cat >"$TOP/README.txt" <<TXT
$APP_NAME $VERSION for Linux ($ARCH)

Install for yourself:    make user-install      (files go under ~/.local)
Install for everyone:    sudo make install      (files go under /usr/local)
Uninstall:               make user-uninstall  /  sudo make uninstall

Then start $APP_NAME from the applications menu, or run: llamatray
It needs llama.cpp's llama-server: see $APP_HOMEPAGE#installing-llama-server
TXT

TARBALL="$OUTDIR/$NAME.tar.xz"
MTIME="@${SOURCE_DATE_EPOCH:-$(date +%s)}"
tar -C "$WORK" --sort=name --owner=0 --group=0 --numeric-owner --mtime="$MTIME" \
	-cf - "$NAME" | xz -9 -T1 >"$TARBALL"
log "wrote $TARBALL ($(stat -c %s "$TARBALL") bytes)"
echo "$TARBALL"
