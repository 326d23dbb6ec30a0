# Shared helpers for the packaging scripts; sourced, not run.
# shellcheck shell=bash disable=SC2034 # the variables are used by the scripts that source this

APP_NAME="Llamatray"
APP_ID="io.github.llamatray"
APP_BIN="llamatray"
APP_PUBLISHER="Llamatray contributors"
APP_HOMEPAGE="https://github.com/llamatray/llamatray"
APP_SUMMARY="Serve local GGUF models from the system tray"
# Icon sizes installed in the freedesktop hicolor theme.
ICON_SIZES=(16 32 48 64 128 256 512)

PACKAGING_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$PACKAGING_DIR/.." && pwd)"

log() { echo "${SCRIPT_NAME:-packaging}: $*" >&2; }
die() {
	log "error: $*"
	exit 1
}

# need CMD...: fails with a hint when a command is missing.
need() {
	local c
	for c in "$@"; do
		command -v "$c" >/dev/null 2>&1 || die "$c is required but not installed"
	done
}

# plain_version V: V without a leading "v" (tags are v1.2.3).
plain_version() {
	local v="${1#v}"
	[[ "$v" =~ ^[0-9][A-Za-z0-9.+~-]*$ ]] || die "version \"$1\" must start with a digit (like 0.1.0 or v0.1.0)"
	echo "$v"
}

# numeric_version V: the leading a.b.c of V as four dot-separated numbers (Windows VERSIONINFO).
numeric_version() {
	local core="${1%%[-+~]*}" a b c
	IFS=. read -r a b c _ <<<"$core"
	echo "${a:-0}.${b:-0}.${c:-0}.0" | sed 's/[^0-9.]//g'
}

# imagemagick: the ImageMagick command ("magick" for 7, "convert" for 6).
imagemagick() {
	if command -v magick >/dev/null 2>&1; then
		magick "$@"
	elif grep -q ImageMagick <<<"$(convert -version 2>/dev/null)"; then # not Windows' convert.exe
		convert "$@"
	else
		die "ImageMagick is required (apt-get install imagemagick, brew install imagemagick)"
	fi
}

# app_icon WORKDIR: prints the path of the 512x512 app icon. assets/icon.png when it exists;
# otherwise a placeholder drawn into WORKDIR (never into the source tree).
app_icon() {
	local icon="$REPO_ROOT/assets/icon.png"
	if [[ -f "$icon" ]]; then
		echo "$icon"
		return
	fi
	local ph="$1/placeholder-icon.png"
	log "warning: $icon is missing; using a placeholder icon"
	imagemagick -size 512x512 xc:none -fill '#2f6fdf' -draw 'roundrectangle 32,32 479,479 96,96' \
		-fill white -draw 'circle 256,256 256,128' "png32:$ph"
	echo "$ph"
}

# resize_png SRC SIZE DEST: a SIZE×SIZE RGBA PNG without timestamps or other metadata.
resize_png() {
	mkdir -p "$(dirname "$3")"
	imagemagick "$1" -resize "${2}x${2}" -strip -define png:exclude-chunks=date,time "png32:$3"
}

# make_ico SRC DEST: a Windows icon with the sizes Explorer and the taskbar use.
make_ico() {
	imagemagick "$1" -define icon:auto-resize=256,128,64,48,32,24,16 "$2"
}

# native_path P: P as the native tools see it (a Windows path under Git Bash/MSYS2).
native_path() {
	if command -v cygpath >/dev/null 2>&1; then
		cygpath -w "$1"
	else
		echo "$1"
	fi
}

# abs_path P: P made absolute (P's folder must exist).
abs_path() {
	echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
}
