#!/usr/bin/env bash
# Builds the Debian/Ubuntu package of Llamatray with dpkg-deb.
#
# Usage: packaging/linux/build-deb.sh VERSION BINARY OUTDIR
#   VERSION  like 0.1.0 or v0.1.0
#   BINARY   the Linux llamatray executable (built with -X main.version=VERSION)
#   OUTDIR   where llamatray_<version>_<arch>.deb is written
# Environment:
#   DEB_ARCH        Debian architecture (default: dpkg --print-architecture)
#   DEB_MAINTAINER  Maintainer field
#   DEB_DEPENDS     Depends field; default: computed from the binary's shared libraries
#   LINTIAN=0       skip lintian; LINTIAN_STRICT=1 fails on lintian errors
#
# Needs dpkg-deb, ImageMagick, file and gzip; dpkg-shlibdeps (dpkg-dev) for versioned
# dependencies; lintian when present.
# shellcheck source-path=SCRIPTDIR
set -euo pipefail
SCRIPT_NAME="build-deb"
# shellcheck source=../common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common.sh"
# shellcheck source=files.sh
source "$PACKAGING_DIR/linux/files.sh"

[[ $# -eq 3 ]] || die "usage: $0 VERSION BINARY OUTDIR"
VERSION="$(plain_version "$1")"
BINARY="$2"
OUTDIR="$3"
need dpkg-deb file gzip install md5sum
[[ -f "$BINARY" && -x "$BINARY" ]] || die "$BINARY is not an executable file"

ARCH="${DEB_ARCH:-$(dpkg --print-architecture)}"
MAINTAINER="${DEB_MAINTAINER:-Llamatray contributors <llamatray@users.noreply.github.com>}"
check_linux_binary "$BINARY" "$ARCH"

# deb_version V: a Debian version for V. A pre-release (0.2.0-rc1) sorts before its release
# (0.2.0~rc1); a git describe suffix (0.1.0-3-gabc1234) sorts after it (0.1.0+3.gabc1234).
deb_version() {
	local v="$1" head rest
	if [[ "$v" != *-* ]]; then
		echo "$v"
		return
	fi
	head="${v%%-*}"
	rest="${v#*-}"
	if [[ "$rest" =~ ^(rc|alpha|beta|pre) ]]; then
		echo "$head~${rest//-/.}"
	else
		echo "$head+${rest//-/.}"
	fi
}
DEB_VERSION="$(deb_version "$VERSION")"

# depends_of BINARY: the packages providing BINARY's shared libraries. dpkg-shlibdeps gives
# versioned dependencies; without it, ldd sonames are mapped to packages with dpkg -S.
depends_of() {
	local bin tmp out
	bin="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
	if command -v dpkg-shlibdeps >/dev/null 2>&1; then
		tmp="$(mktemp -d)"
		mkdir -p "$tmp/debian"
		printf 'Source: %s\n\nPackage: %s\nArchitecture: any\n' "$APP_BIN" "$APP_BIN" >"$tmp/debian/control"
		if out="$(cd "$tmp" && dpkg-shlibdeps -O -e"$bin" 2>/dev/null)"; then
			rm -rf "$tmp"
			out="${out#shlibs:Depends=}"
			[[ -n "$out" ]] && echo "$out" && return
		fi
		rm -rf "$tmp"
		log "warning: dpkg-shlibdeps failed; mapping libraries with dpkg -S"
	fi
	local path pkgs=()
	while read -r _ path; do
		[[ -n "$path" && -e "$path" ]] || continue
		pkgs+=("$(dpkg -S "$(readlink -f "$path")" 2>/dev/null | awk -F: 'NR == 1 {print $1}')")
	done < <(ldd "$bin" | awk '$2 == "=>" {print $1, $3}')
	printf '%s\n' "${pkgs[@]}" | grep -v '^$' | sort -u | paste -sd, | sed 's/,/, /g'
}

# GLFW (Fyne's window library) opens these X11 libraries with dlopen, so they are not among the
# binary's NEEDED entries: SONAME:fallback-package. One is a dependency when the binary names it.
DLOPENED=(libXcursor.so.1:libxcursor1 libXrandr.so.2:libxrandr2 libXinerama.so.1:libxinerama1
	libXi.so.6:libxi6 libXxf86vm.so.1:libxxf86vm1 libX11-xcb.so.1:libx11-xcb1 libXrender.so.1:libxrender1)

# dlopen_depends BINARY: the packages of the DLOPENED libraries BINARY names, one per line.
dlopen_depends() {
	local entry soname fallback path pkg
	for entry in "${DLOPENED[@]}"; do
		soname="${entry%%:*}"
		fallback="${entry#*:}"
		grep -qaF "$soname" "$1" || continue
		pkg=""
		# awk reads to the end: an early exit would fail the pipeline (pipefail) with SIGPIPE.
		path="$(ldconfig -p 2>/dev/null | awk -v s="$soname" '$1 == s && !found {print $NF; found = 1}')"
		if [[ -n "$path" ]]; then
			pkg="$(dpkg -S "$path" 2>/dev/null || dpkg -S "$(readlink -f "$path")" 2>/dev/null || true)"
			pkg="$(head -n1 <<<"$pkg" | cut -d: -f1)"
		fi
		echo "${pkg:-$fallback}"
	done
}

# merge_depends LIST EXTRA...: LIST (a Depends value) plus the packages in EXTRA it lacks.
merge_depends() {
	local out="$1" p
	shift
	for p in "$@"; do
		[[ ", $out," == *", $p "* || ", $out," == *", $p,"* ]] || out="${out:+$out, }$p"
	done
	echo "$out"
}

if [[ -n "${DEB_DEPENDS:-}" ]]; then
	DEPENDS="$DEB_DEPENDS"
else
	mapfile -t extra < <(dlopen_depends "$BINARY")
	DEPENDS="$(merge_depends "$(depends_of "$BINARY")" "${extra[@]}")"
fi
[[ -n "$DEPENDS" ]] || die "could not work out the dependencies of $BINARY; set DEB_DEPENDS"
log "Depends: $DEPENDS"

mkdir -p "$OUTDIR"
OUTDIR="$(cd "$OUTDIR" && pwd)"
WORK="$(mktemp -d "$OUTDIR/.deb-build.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
umask 022
ROOT="$WORK/root"
install_linux_files "$ROOT" /usr "$BINARY" "$WORK"

DOC="$ROOT/usr/share/doc/$APP_BIN"
install -d "$DOC"
write_copyright "$DOC/copyright" "$MAINTAINER"
# A version without a Debian revision makes this a native package: changelog.gz.
CHANGELOG_DATE="$(date -R -u ${SOURCE_DATE_EPOCH:+-d "@$SOURCE_DATE_EPOCH"})"
cat <<EOF | gzip -9n >"$DOC/changelog.gz"
$APP_BIN ($DEB_VERSION) unstable; urgency=medium

  * Release $VERSION. See $APP_HOMEPAGE/releases.

 -- $MAINTAINER  $CHANGELOG_DATE
EOF
chmod 0644 "$DOC/copyright" "$DOC/changelog.gz"

install -d "$ROOT/DEBIAN"
INSTALLED_SIZE="$(du -sk --apparent-size "$ROOT/usr" | cut -f1)"
cat >"$ROOT/DEBIAN/control" <<EOF
Package: $APP_BIN
Version: $DEB_VERSION
Architecture: $ARCH
Maintainer: $MAINTAINER
Installed-Size: $INSTALLED_SIZE
Depends: $DEPENDS
Recommends: llama.cpp-tools
Section: utils
Priority: optional
Homepage: $APP_HOMEPAGE
Description: $APP_SUMMARY
 Llamatray finds the GGUF language models on this computer and serves them
 through one OpenAI-compatible HTTP endpoint on 127.0.0.1:8080. It starts a
 llama.cpp llama-server for a model when the first request for it arrives, and
 unloads models that sit idle or no longer fit in memory. A tray icon shows
 what is loaded; a window lists the models, their memory use and logs.
 .
 Llamatray needs llama-server from llama.cpp (package llama.cpp-tools where
 the distribution has it, or a build from the llama.cpp releases).
EOF
(cd "$ROOT" && find usr -type f -print0 | LC_ALL=C sort -z | xargs -0 md5sum) >"$ROOT/DEBIAN/md5sums"
chmod 0644 "$ROOT/DEBIAN/control" "$ROOT/DEBIAN/md5sums"

DEB="$OUTDIR/${APP_BIN}_${DEB_VERSION}_${ARCH}.deb"
dpkg-deb --root-owner-group -Zxz --build "$ROOT" "$DEB" >&2

if [[ "${LINTIAN:-1}" != 0 ]] && command -v lintian >/dev/null 2>&1; then
	log "lintian:"
	if ! lintian --info --no-tag-display-limit "$DEB" >&2; then
		[[ "${LINTIAN_STRICT:-0}" == 1 ]] && die "lintian reported errors"
		log "warning: lintian reported errors (set LINTIAN_STRICT=1 to fail)"
	fi
fi
log "wrote $DEB ($(stat -c %s "$DEB") bytes)"
echo "$DEB"
