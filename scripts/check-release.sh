#!/usr/bin/env bash
# Checks what `make release-snapshot` (GoReleaser, .goreleaser.yaml) left in DIST: every expected
# artifact is there and is what its name says (file(1)), SHA256SUMS lists each one and matches
# (sha256sum -c), the .rpm's metadata and files (rpm -qpi/-qpl, rpmlint when installed), the .deb's
# (dpkg-deb), the package-manager manifests name the right files and checksums, and the headless
# Linux server runs.
#
# Usage: scripts/check-release.sh [DIST]    (default dist)
set -euo pipefail
DIST="${1:-dist}"
cd "$DIST"
fail=0
log() { echo "check-release: $*"; }
bad() {
	echo "check-release: FAIL: $*" >&2
	fail=1
}

# one GLOB WHAT: exactly one file matches GLOB and file(1) says WHAT (an extended regex) of it.
one() {
	local -a m
	mapfile -t m < <(compgen -G "$1" || true)
	if [[ ${#m[@]} -ne 1 ]]; then
		bad "want one $1, found ${#m[@]}: ${m[*]}"
		return
	fi
	local desc
	desc="$(file -b "${m[0]}")"
	if [[ "$desc" =~ $2 ]]; then
		log "ok  ${m[0]} ($(stat -c %s "${m[0]}") bytes): ${desc:0:60}"
	else
		bad "${m[0]} is not $2: $desc"
	fi
}

one 'llamatray_*_amd64.deb' 'Debian binary package'
one 'llamatray-*.x86_64.rpm' 'RPM'
one 'llamatray-*-x86_64.pkg.tar.zst' 'Zstandard compressed'
one 'llamatray_*_x86_64.apk' 'gzip compressed'
one 'llamatray_*_aarch64.apk' 'gzip compressed'
one 'llamatray-[0-9]*-linux-amd64.tar.xz' 'XZ compressed'
one 'llamatray-[0-9]*-windows-amd64.zip' 'Zip archive'
for a in amd64 arm64; do
	one "llamatray-server-*-linux-$a.tar.gz" 'gzip compressed'
	one "llamatray-server-*-darwin-$a.tar.gz" 'gzip compressed'
done
# The setup is NSIS's 64-bit build; file(1) names only 32-bit NSIS stubs, so the NSIS header's
# signature is looked for in the file itself.
one 'Llamatray-Setup-*.exe' 'PE32\+ executable.*x86-64'
for f in Llamatray-Setup-*.exe; do
	[[ ! -e "$f" ]] || grep -q NullsoftInst "$f" || bad "$f has no NSIS header (NullsoftInst)"
done
one 'SHA256SUMS' 'text'
one 'homebrew/Casks/llamatray-server.rb' 'Ruby script|text'
one 'scoop/llamatray.json' 'JSON'
one 'winget/manifests/l/Llamatray/Llamatray/*/Llamatray.Llamatray.installer.yaml' 'text'

# Every artifact above is listed in SHA256SUMS, and every sum matches.
if [[ -f SHA256SUMS ]]; then
	log "sha256sum -c SHA256SUMS:"
	sha256sum -c SHA256SUMS || bad "SHA256SUMS does not match"
	for f in *.deb *.rpm *.pkg.tar.zst *.apk *.tar.gz *.tar.xz *.zip Llamatray-Setup-*.exe; do
		[[ -e "$f" ]] || continue
		awk -v f="$f" '$2 == f || $2 == "*" f {found = 1} END {exit !found}' SHA256SUMS || bad "$f is not in SHA256SUMS"
	done
fi

# The packages' metadata and contents.
sum_of() { awk -v f="$1" '$2 == f {print $1}' SHA256SUMS; }
rpm_file="$(compgen -G 'llamatray-*.x86_64.rpm' | head -n1 || true)"
if [[ -n "$rpm_file" ]]; then
	if command -v rpm >/dev/null 2>&1; then
		log "rpm -qpi $rpm_file:"
		rpm -qpi "$rpm_file" || bad "rpm -qpi failed"
		log "rpm -qpl:"
		list="$(rpm -qpl "$rpm_file")" || bad "rpm -qpl failed"
		echo "$list"
		for want in /usr/bin/llamatray /usr/share/applications/io.github.llamatray.desktop \
			/usr/share/icons/hicolor/256x256/apps/io.github.llamatray.png /usr/share/man/man1/llamatray.1.gz; do
			grep -qx "$want" <<<"$list" || bad "$rpm_file lacks $want"
		done
		log "rpm -qpR:"
		grep -q libXcursor.so.1 <<<"$(rpm -qpR "$rpm_file")" || bad "$rpm_file does not require libXcursor"
		if command -v rpmlint >/dev/null 2>&1; then
			log "rpmlint:"
			# rpmlint unpacks with `rpm2cpio | cpio -id`; nFPM's payload names files with absolute
			# paths (/usr/bin/...), which GNU cpio would write into this system's /usr: a cpio that
			# refuses absolute names keeps them in rpmlint's folder. Warnings are reported, errors fail.
			shim="$(mktemp -d)"
			printf '#!/bin/sh\nexec %s --no-absolute-filenames "$@"\n' "$(command -v cpio)" >"$shim/cpio"
			chmod +x "$shim/cpio"
			lint="$(PATH="$shim:$PATH" rpmlint "$rpm_file" 2>&1 || true)"
			rm -rf "$shim"
			echo "$lint"
			# Allowed: a snapshot is not signed, and nFPM writes no %changelog.
			errors="$(grep ': E: ' <<<"$lint" | grep -v -e ': E: no-signature' -e ': E: no-changelogname-tag' || true)"
			[[ -z "$errors" ]] || bad "rpmlint: $errors"
			grep -q 'packages and 0 specfiles checked' <<<"$lint" || bad "rpmlint did not check $rpm_file"
		else
			log "rpmlint is not installed: skipped"
		fi
	else
		log "rpm is not installed: the .rpm's contents are not checked"
	fi
fi
deb_file="$(compgen -G 'llamatray_*_amd64.deb' | head -n1 || true)"
if [[ -n "$deb_file" ]] && command -v dpkg-deb >/dev/null 2>&1; then
	contents="$(dpkg-deb -c "$deb_file")"
	grep -q '\./usr/bin/llamatray$' <<<"$contents" || bad "$deb_file lacks /usr/bin/llamatray"
	grep -q libxcursor1 <<<"$(dpkg-deb -f "$deb_file" Depends)" || bad "$deb_file does not depend on libxcursor1"
	if command -v lintian >/dev/null 2>&1; then
		log "lintian (reported, not failing):"
		lintian --no-tag-display-limit "$deb_file" || true
	fi
fi

# The manifests point at the artifacts with their checksums.
setup="$(compgen -G 'Llamatray-Setup-*.exe' | head -n1 || true)"
inst="$(compgen -G 'winget/manifests/l/Llamatray/Llamatray/*/Llamatray.Llamatray.installer.yaml' | head -n1 || true)"
if [[ -n "$setup" && -n "$inst" ]]; then
	want="$(sum_of "$setup" | tr a-f A-F)"
	grep -q "InstallerSha256: $want" "$inst" || bad "$inst does not carry $setup's sha256"
	grep -q "InstallerUrl: https://.*/$setup$" "$inst" || bad "$inst does not point at $setup"
fi
zip_file="$(compgen -G 'llamatray-[0-9]*-windows-amd64.zip' | head -n1 || true)"
if [[ -n "$zip_file" && -f scoop/llamatray.json ]]; then
	python3 - "$(sum_of "$zip_file")" "$zip_file" <<'PY' || bad "scoop/llamatray.json does not describe $zip_file"
import json, sys
m = json.load(open("scoop/llamatray.json"))
a = m["architecture"]["64bit"]
assert a["hash"] == sys.argv[1] and a["url"].endswith("/" + sys.argv[2]), a
PY
fi
if [[ -f homebrew/Casks/llamatray-server.rb ]]; then
	for a in amd64 arm64; do
		f="$(compgen -G "llamatray-server-*-darwin-$a.tar.gz" | head -n1 || true)"
		[[ -n "$f" ]] && { grep -q "$(sum_of "$f")" homebrew/Casks/llamatray-server.rb || bad "the cask lacks $f's sha256"; }
	done
fi

# The generic Linux archive installs with its own Makefile (into a scratch DESTDIR).
tarball="$(compgen -G 'llamatray-[0-9]*-linux-amd64.tar.xz' | head -n1 || true)"
if [[ -n "$tarball" ]] && command -v make >/dev/null 2>&1; then
	tmp="$(mktemp -d)"
	tar -xJf "$tarball" -C "$tmp"
	top="$tmp/${tarball%.tar.xz}"
	if make --no-print-directory -C "$top" install DESTDIR="$tmp/root" PREFIX=/usr/local >/dev/null; then
		for want in bin/llamatray share/applications/io.github.llamatray.desktop share/man/man1/llamatray.1.gz \
			share/icons/hicolor/256x256/apps/io.github.llamatray.png share/metainfo/io.github.llamatray.metainfo.xml; do
			[[ -f "$tmp/root/usr/local/$want" ]] || bad "$tarball's make install did not install $want"
		done
		grep -q '^Exec=/usr/local/bin/llamatray' "$tmp/root/usr/local/share/applications/io.github.llamatray.desktop" ||
			bad "$tarball's make install did not point the menu entry at the program"
		log "ok  $tarball installs with its Makefile"
	else
		bad "make install of $tarball failed"
	fi
	rm -rf "$tmp"
fi

# The headless server for this machine runs and says its version.
srv="$(compgen -G 'llamatray-server-*-linux-amd64.tar.gz' | head -n1 || true)"
if [[ -n "$srv" && "$(uname -m)" == x86_64 ]]; then
	tmp="$(mktemp -d)"
	tar -xzf "$srv" -C "$tmp"
	bin="$(compgen -G "$tmp/*/llamatray" | head -n1 || true)"
	out="$("${bin:-$tmp/none}" version)" || bad "the headless server from $srv does not run"
	log "$srv: $out"
	rm -rf "$tmp"
fi

if [[ $fail != 0 ]]; then
	log "FAILED"
	exit 1
fi
log "all artifacts present, SHA256SUMS matches"
