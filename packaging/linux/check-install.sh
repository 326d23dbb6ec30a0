#!/usr/bin/env bash
# Installs, runs and removes the Linux packages of a release as a user would: the .deb with apt
# (on Debian/Ubuntu, as root or with sudo), the .rpm with rpm into an empty root (no Fedora system
# is at hand here: its dependencies are not in that root's database, so --nodeps; the program runs
# against this system's libraries). Each must leave no file behind.
#
# Usage: packaging/linux/check-install.sh DIST
set -euo pipefail
DIST="$(cd "${1:?usage: $0 DIST}" && pwd)"
SUDO=""
[[ "$(id -u)" == 0 ]] || SUDO=sudo
log() { echo "check-install: $*"; }
die() {
	echo "check-install: error: $*" >&2
	exit 1
}

deb="$(compgen -G "$DIST/llamatray_*_amd64.deb" | head -n1 || true)"
if [[ -n "$deb" ]] && command -v apt-get >/dev/null 2>&1; then
	log "apt-get install $deb"
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$deb"
	/usr/bin/llamatray version || die "the installed llamatray does not run"
	$SUDO dpkg -r llamatray
	[[ ! -e /usr/bin/llamatray ]] || die "dpkg -r left /usr/bin/llamatray"
	! dpkg -L llamatray >/dev/null 2>&1 || die "dpkg still lists llamatray's files"
	log "ok: the .deb installs, runs and is removed"
fi

rpm_file="$(compgen -G "$DIST/llamatray-*.x86_64.rpm" | head -n1 || true)"
if [[ -n "$rpm_file" ]] && command -v rpm >/dev/null 2>&1; then
	root="$(mktemp -d)"
	trap 'rm -rf "$root"' EXIT
	rpm --root "$root" --initdb
	log "rpm --root $root -i --nodeps $(basename "$rpm_file")"
	rpm --root "$root" -i --nodeps --nosignature "$rpm_file"
	rpm --root "$root" -q llamatray
	"$root/usr/bin/llamatray" version || die "the llamatray installed from the .rpm does not run"
	rpm --root "$root" -e llamatray
	left="$(find "$root/usr" -type f 2>/dev/null | head -n5)"
	[[ -z "$left" ]] || die "rpm -e left files: $left"
	log "ok: the .rpm installs, runs and is removed"
fi
