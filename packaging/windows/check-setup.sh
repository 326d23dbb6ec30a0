#!/usr/bin/env bash
# Installs, runs and uninstalls the Windows setup silently, as a user's script would; on Windows
# (Git Bash). Under Wine, router/testbed/wintest does the same and more (make test-windows).
#
# Usage: packaging/windows/check-setup.sh Llamatray-Setup-VERSION.exe
set -euo pipefail
SETUP="${1:?usage: $0 Llamatray-Setup-VERSION.exe}"
log() { echo "check-setup: $*"; }
die() {
	echo "check-setup: error: $*" >&2
	exit 1
}
command -v cygpath >/dev/null 2>&1 || die "this runs on Windows (Git Bash or MSYS2)"
"$SETUP" //S //NOAUTOSTART
dir="$(cygpath -u "$LOCALAPPDATA")/Programs/Llamatray"
"$dir/llamatray.exe" version || die "the installed llamatray.exe does not run"
reg query 'HKCU\Software\Microsoft\Windows\CurrentVersion\Uninstall\Llamatray' //v DisplayVersion
if reg query 'HKCU\Software\Microsoft\Windows\CurrentVersion\Run' //v Llamatray >/dev/null 2>&1; then
	die "/NOAUTOSTART still wrote the Run value"
fi
"$dir/uninstall.exe" //S
# The uninstaller runs from a copy in TEMP and returns at once: wait for it (an external process).
for _ in $(seq 1 60); do
	[[ -e "$dir" ]] || break
	sleep 1
done
if [[ -e "$dir" ]]; then
	ls -la "$dir"
	die "the uninstaller left files behind"
fi
if reg query 'HKCU\Software\Microsoft\Windows\CurrentVersion\Uninstall\Llamatray' >/dev/null 2>&1; then
	die "the uninstaller left its Add/Remove Programs entry"
fi
log "ok: $(basename "$SETUP") installs, runs and uninstalls"
