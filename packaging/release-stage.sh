#!/usr/bin/env bash
# Stages the files that .goreleaser.yaml packages beside the programs it builds: the Linux desktop
# entry, AppStream metadata, icons, man page and copyright (for the .deb, .rpm and Arch package),
# the generic Linux archive's Makefile and README, and the Windows resources (.syso). GoReleaser
# runs it first (`before` hook); it is the same code the single-package scripts use.
#
# Usage: packaging/release-stage.sh VERSION OUTDIR
# shellcheck source-path=SCRIPTDIR
set -euo pipefail
SCRIPT_NAME="release-stage"
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
# shellcheck source=linux/files.sh
source "$PACKAGING_DIR/linux/files.sh"

[[ $# -eq 2 ]] || die "usage: $0 VERSION OUTDIR"
VERSION="$(plain_version "$1")"
need install gzip
OUT="$2"
rm -rf "$OUT"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
umask 022

MAINTAINER="Llamatray contributors <llamatray@users.noreply.github.com>"
install_linux_share "$OUT/linux-root" /usr "$WORK"
write_copyright "$OUT/linux-root/usr/share/doc/$APP_BIN/copyright" "$MAINTAINER"
# The headless server's packages (Alpine) get the man page and copyright only.
install -D -m 0644 "$OUT/linux-root/usr/share/man/man1/$APP_BIN.1.gz" "$OUT/server-root/usr/share/man/man1/$APP_BIN.1.gz"
install -D -m 0644 "$OUT/linux-root/usr/share/doc/$APP_BIN/copyright" "$OUT/server-root/usr/share/doc/$APP_BIN/copyright"
tarball_extras "$OUT/linux-tarball" "$VERSION" amd64 "$WORK"
"$PACKAGING_DIR/windows/build-syso.sh" "$VERSION" "$OUT/windows/rsrc.syso" >/dev/null
log "staged $OUT"
