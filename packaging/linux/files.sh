# Installs Llamatray's Linux files into a staging tree; sourced by build-deb.sh and
# build-tarball.sh after packaging/common.sh.
# shellcheck shell=bash

# install_linux_files ROOT PREFIX BINARY WORKDIR: the binary in ROOT/PREFIX/bin, the desktop
# entry, AppStream metainfo, hicolor icons and man page under ROOT/PREFIX/share.
install_linux_files() {
	local root="$1" prefix="$2" binary="$3" work="$4"
	local share="$root$prefix/share" icon size
	install -D -m 0755 "$binary" "$root$prefix/bin/$APP_BIN"
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
