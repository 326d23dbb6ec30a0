#!/usr/bin/env bash
# Builds Llamatray.app and Llamatray-<version>.dmg on a Mac (Xcode command line tools, Go).
#
# Usage: packaging/macos/build-dmg.sh VERSION [OUTDIR]     (OUTDIR defaults to dist)
#
# Environment:
#   MACOS_ARCHS            architectures to build, lipo'd into one binary (default "arm64 amd64")
#   MACOS_MIN              oldest macOS supported (default 12.0, the oldest Go supports)
#   COMMIT                 commit shown by `llamatray version` (default: git rev-parse --short HEAD)
#   LLAMA_SERVER_DIR       a relocatable llama.cpp macOS build folder (llama-server and its
#                          dylibs, as in the llama.cpp release zip's bin folder), bundled as
#                          Contents/Resources/llama-server/
#   MACOS_SIGN_IDENTITY    "Developer ID Application: Name (TEAMID)": sign with the hardened
#                          runtime and a secure timestamp. Without it the app is signed ad hoc
#                          (it runs, but Gatekeeper asks the user to confirm the first start).
#   MACOS_ENTITLEMENTS     optional entitlements file for the signature
#   MACOS_NOTARY_PROFILE   notarize with `xcrun notarytool --keychain-profile` (see
#                          `xcrun notarytool store-credentials`), or else
#   APPLE_ID, TEAM_ID, APP_PASSWORD   notarize with an app-specific password.
#   Notarizing needs MACOS_SIGN_IDENTITY. The app and the disk image are both notarized and
#   stapled, so they open without a network connection.
# shellcheck source-path=SCRIPTDIR
set -euo pipefail
SCRIPT_NAME="build-dmg"
# shellcheck source=../common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common.sh"

[[ $# -ge 1 && $# -le 2 ]] || die "usage: $0 VERSION [OUTDIR]"
VERSION="$(plain_version "$1")"
OUTDIR="${2:-$REPO_ROOT/dist}"
[[ "$(uname -s)" == Darwin ]] || die "this script runs on macOS (it needs codesign, iconutil and hdiutil)"
need go clang lipo codesign iconutil sips hdiutil ditto plutil xcrun

ARCHS="${MACOS_ARCHS:-arm64 amd64}"
MIN_MACOS="${MACOS_MIN:-12.0}"
SHORT_VERSION="${VERSION%%[-+~]*}"
COMMIT="${COMMIT:-$(git -C "$REPO_ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)}"
IDENTITY="${MACOS_SIGN_IDENTITY:-}"

notarize_args=()
if [[ -n "${MACOS_NOTARY_PROFILE:-}" ]]; then
	notarize_args=(--keychain-profile "$MACOS_NOTARY_PROFILE")
elif [[ -n "${APPLE_ID:-}" || -n "${TEAM_ID:-}" || -n "${APP_PASSWORD:-}" ]]; then
	[[ -n "${APPLE_ID:-}" && -n "${TEAM_ID:-}" && -n "${APP_PASSWORD:-}" ]] ||
		die "notarizing needs all of APPLE_ID, TEAM_ID and APP_PASSWORD"
	notarize_args=(--apple-id "$APPLE_ID" --team-id "$TEAM_ID" --password "$APP_PASSWORD")
fi
[[ ${#notarize_args[@]} -eq 0 || -n "$IDENTITY" ]] || die "notarizing needs MACOS_SIGN_IDENTITY"
if [[ -n "${LLAMA_SERVER_DIR:-}" ]]; then
	[[ -x "$LLAMA_SERVER_DIR/llama-server" ]] || die "LLAMA_SERVER_DIR=$LLAMA_SERVER_DIR has no llama-server"
fi

mkdir -p "$OUTDIR"
OUTDIR="$(cd "$OUTDIR" && pwd)"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

# 1. The program: one binary per architecture, joined into a universal one.
slices=()
for arch in $ARCHS; do
	log "building $arch"
	(cd "$REPO_ROOT" && CGO_ENABLED=1 GOOS=darwin GOARCH="$arch" MACOSX_DEPLOYMENT_TARGET="$MIN_MACOS" \
		CGO_CFLAGS="-mmacosx-version-min=$MIN_MACOS" CGO_LDFLAGS="-mmacosx-version-min=$MIN_MACOS" \
		go build -trimpath -ldflags "-s -w -X main.version=$VERSION -X main.commit=$COMMIT" \
		-o "$WORK/llamatray-$arch" .)
	slices+=("$WORK/llamatray-$arch")
done
lipo -create -output "$WORK/llamatray" "${slices[@]}"

# 2. The bundle.
APP="$WORK/$APP_NAME.app"
mkdir -p "$APP/Contents/MacOS" "$APP/Contents/Resources"
install -m 0755 "$WORK/llamatray" "$APP/Contents/MacOS/llamatray"
sed -e "s/@SHORT_VERSION@/$SHORT_VERSION/" -e "s/@BUNDLE_VERSION@/$SHORT_VERSION/" -e "s/@MIN_MACOS@/$MIN_MACOS/" \
	"$PACKAGING_DIR/macos/Info.plist" >"$APP/Contents/Info.plist"
plutil -lint "$APP/Contents/Info.plist" >&2
printf 'APPL????' >"$APP/Contents/PkgInfo"

ICONSET="$WORK/llamatray.iconset"
mkdir -p "$ICONSET"
ICON="$(app_icon "$WORK")"
for size in 16 32 128 256 512; do
	sips -z "$size" "$size" "$ICON" --out "$ICONSET/icon_${size}x${size}.png" >/dev/null
	double=$((size * 2))
	if [[ $double -le 512 ]]; then # the source is 512x512: no upscaled 512@2x
		sips -z "$double" "$double" "$ICON" --out "$ICONSET/icon_${size}x${size}@2x.png" >/dev/null
	fi
done
iconutil -c icns -o "$APP/Contents/Resources/llamatray.icns" "$ICONSET"

if [[ -n "${LLAMA_SERVER_DIR:-}" ]]; then
	log "bundling llama-server from $LLAMA_SERVER_DIR"
	ditto "$LLAMA_SERVER_DIR" "$APP/Contents/Resources/llama-server"
	"$APP/Contents/Resources/llama-server/llama-server" --version >&2 ||
		die "the bundled llama-server does not run from inside the app (is the build relocatable?)"
fi

# 3. Signing: nested code first, each Mach-O file on its own, then the bundle.
sign() {
	local args=(--force --timestamp --options runtime --sign "$IDENTITY")
	[[ -n "${MACOS_ENTITLEMENTS:-}" ]] && args+=(--entitlements "$MACOS_ENTITLEMENTS")
	codesign "${args[@]}" "$@"
}
if [[ -n "$IDENTITY" ]]; then
	log "signing with $IDENTITY"
	if [[ -d "$APP/Contents/Resources/llama-server" ]]; then
		while IFS= read -r -d '' f; do
			if [[ "$(file -b "$f")" == *Mach-O* ]]; then sign "$f"; fi
		done < <(find "$APP/Contents/Resources/llama-server" -type f -print0)
	fi
	sign "$APP"
else
	log "MACOS_SIGN_IDENTITY is not set: signing ad hoc"
	codesign --force --deep --sign - "$APP"
fi
codesign --verify --deep --strict --verbose=2 "$APP" >&2

notarize() { # notarize FILE: submits FILE and waits for Apple's verdict
	log "notarizing $(basename "$1")"
	xcrun notarytool submit "$1" "${notarize_args[@]}" --wait --timeout 30m >&2 ||
		die "notarization of $1 failed (xcrun notarytool log <id> ${notarize_args[*]:0:2} shows why)"
}
if [[ ${#notarize_args[@]} -gt 0 ]]; then
	ditto -c -k --keepParent "$APP" "$WORK/app.zip"
	notarize "$WORK/app.zip"
	xcrun stapler staple "$APP" >&2
	spctl --assess --type execute --verbose=2 "$APP" >&2
fi

# 4. The disk image: the app and a link to /Applications to drag it onto.
STAGE="$WORK/dmg"
mkdir -p "$STAGE"
ditto "$APP" "$STAGE/$APP_NAME.app"
ln -s /Applications "$STAGE/Applications"
DMG="$OUTDIR/$APP_NAME-$VERSION.dmg"
rm -f "$DMG"
hdiutil create -volname "$APP_NAME $VERSION" -srcfolder "$STAGE" -fs HFS+ -format UDZO -ov "$DMG" >&2
if [[ -n "$IDENTITY" ]]; then
	codesign --force --timestamp --sign "$IDENTITY" "$DMG"
fi
if [[ ${#notarize_args[@]} -gt 0 ]]; then
	notarize "$DMG"
	xcrun stapler staple "$DMG" >&2
fi
hdiutil verify "$DMG" >&2
log "wrote $DMG ($(wc -c <"$DMG" | tr -d ' ') bytes)"
echo "$DMG"
