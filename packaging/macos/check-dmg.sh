#!/usr/bin/env bash
# Opens the disk image as a user would, copies Llamatray.app out of it into a scratch Applications
# folder, checks its signature and runs its command line, then removes it; on macOS.
#
# Usage: packaging/macos/check-dmg.sh Llamatray-VERSION.dmg
set -euo pipefail
DMG="${1:?usage: $0 Llamatray-VERSION.dmg}"
log() { echo "check-dmg: $*"; }
die() {
	echo "check-dmg: error: $*" >&2
	exit 1
}
[[ "$(uname -s)" == Darwin ]] || die "this runs on macOS (hdiutil)"
hdiutil verify "$DMG"
mnt="$(mktemp -d)"
apps="$(mktemp -d)"
cleanup() {
	hdiutil detach "$mnt" -quiet 2>/dev/null || true
	rm -rf "$apps"
	rmdir "$mnt" 2>/dev/null || true
}
trap cleanup EXIT
hdiutil attach "$DMG" -nobrowse -readonly -mountpoint "$mnt" -quiet
[[ -L "$mnt/Applications" ]] || die "the image has no Applications link to drag the app onto"
ditto "$mnt/Llamatray.app" "$apps/Llamatray.app"
codesign --verify --deep --strict "$apps/Llamatray.app"
plutil -lint "$apps/Llamatray.app/Contents/Info.plist"
"$apps/Llamatray.app/Contents/MacOS/llamatray" version || die "the app's llamatray does not run"
rm -rf "$apps/Llamatray.app"
log "ok: $(basename "$DMG") opens, its app runs and is removed"
