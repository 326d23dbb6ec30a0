# Installs Llamatray's Linux files into a staging tree; sourced by build-deb.sh and
# build-tarball.sh after packaging/common.sh.
# shellcheck shell=bash

# install_linux_files ROOT PREFIX BINARY WORKDIR: the binary in ROOT/PREFIX/bin, the desktop
# entry, AppStream metainfo, hicolor icons and man page under ROOT/PREFIX/share.
install_linux_files() {
	install -D -m 0755 "$3" "$1$2/bin/$APP_BIN"
	install_linux_share "$1" "$2" "$4"
}

# install_linux_share ROOT PREFIX WORKDIR: install_linux_files without the binary (the release
# configuration, .goreleaser.yaml, packages its own build).
install_linux_share() {
	local root="$1" prefix="$2" work="$3"
	local share="$root$prefix/share" icon size
	install -D -m 0644 "$PACKAGING_DIR/linux/$APP_ID.desktop" "$share/applications/$APP_ID.desktop"
	install -D -m 0644 "$PACKAGING_DIR/linux/$APP_ID.metainfo.xml" "$share/metainfo/$APP_ID.metainfo.xml"
	icon="$(app_icon "$work")"
	for size in "${ICON_SIZES[@]}"; do
		resize_png "$icon" "$size" "$share/icons/hicolor/${size}x${size}/apps/$APP_ID.png"
	done
	mkdir -p "$share/man/man1"
	gzip -9n <"$PACKAGING_DIR/linux/$APP_BIN.1" >"$share/man/man1/$APP_BIN.1.gz"
	chmod 0644 "$share/man/man1/$APP_BIN.1.gz" "$share"/icons/hicolor/*/apps/*.png
}

# check_linux_binary BINARY ARCH: fails unless BINARY is an ELF executable for the Debian ARCH.
check_linux_binary() {
	local want desc
	case "$2" in
	amd64) want="x86-64" ;;
	arm64) want="aarch64" ;;
	*) want="" ;;
	esac
	desc="$(file -bL "$1")"
	[[ "$desc" == ELF* ]] || die "$1 is not a Linux executable: $desc"
	[[ -z "$want" || "$desc" == *"$want"* ]] || die "$1 is not built for $2: $desc"
}

# write_copyright FILE MAINTAINER: the Debian-format copyright file the packages ship.
write_copyright() {
	install -d "$(dirname "$1")"
	cat >"$1" <<EOF
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: $APP_BIN
Upstream-Contact: $2
Source: $APP_HOMEPAGE
Comment: The llamatray binary also contains the Go modules listed in the source's go.mod,
 each under its own license (BSD-3-Clause, MIT, Apache-2.0).

Files: *
Copyright: 2026 $APP_PUBLISHER
License: MIT
 Permission is hereby granted, free of charge, to any person obtaining a copy
 of this software and associated documentation files (the "Software"), to deal
 in the Software without restriction, including without limitation the rights
 to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
 copies of the Software, and to permit persons to whom the Software is
 furnished to do so, subject to the following conditions:
 .
 The above copyright notice and this permission notice shall be included in all
 copies or substantial portions of the Software.
 .
 THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
 IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
 FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
 AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
 LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
 OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
 SOFTWARE.
EOF
	chmod 0644 "$1"
}

# tarball_extras TOP VERSION ARCH WORKDIR: the generic archive's files beside the binary: share/,
# its Makefile and README.txt.
tarball_extras() {
	local top="$1" version="$2" arch="$3"
	install_linux_share "$top" "" "$4"
	install -m 0644 "$PACKAGING_DIR/linux/tarball.mk" "$top/Makefile"
	cat >"$top/README.txt" <<TXT
$APP_NAME $version for Linux ($arch)

Install for yourself:    make user-install      (files go under ~/.local)
Install for everyone:    sudo make install      (files go under /usr/local)
Uninstall:               make user-uninstall  /  sudo make uninstall

Then start $APP_NAME from the applications menu, or run: llamatray
It runs models with llama.cpp's llama-server: when none is found, it offers to download llama.cpp's
own build (or run: llamatray llama-server install). See $APP_HOMEPAGE#getting-llama-server
TXT
	chmod 0644 "$top/README.txt"
}
