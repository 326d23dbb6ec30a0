#!/usr/bin/env bash
# Builds the Windows installer Llamatray-Setup-<version>.exe with NSIS (makensis), on Linux
# (apt-get install nsis) or on Windows (Git Bash, NSIS on PATH).
#
# Usage: packaging/windows/build-installer.sh VERSION EXE OUTDIR
#   EXE     llamatray.exe from build-exe.sh
# Environment:
#   LLAMA_SERVER_DIR  a llama.cpp Windows build folder (llama-server.exe and its DLLs) to
#                     bundle; it is installed as <install dir>\llama-server\
#   NSIS_TARGET       NSIS's target (default amd64-unicode: a 64-bit installer, as llamatray.exe is
#                     64-bit only; x86-unicode makes NSIS's 32-bit one, which needs a Windows, or a
#                     Wine and a Linux kernel, that runs 32-bit programs)
# shellcheck source-path=SCRIPTDIR
set -euo pipefail
SCRIPT_NAME="build-installer"
# shellcheck source=../common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common.sh"

[[ $# -eq 3 ]] || die "usage: $0 VERSION EXE OUTDIR"
VERSION="$(plain_version "$1")"
[[ -f "$2" ]] || die "$2 does not exist"
EXE="$(abs_path "$2")"
mkdir -p "$3"
OUTDIR="$(cd "$3" && pwd)"
need makensis

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
make_ico "$(app_icon "$WORK")" "$WORK/llamatray.ico"

OUTFILE="$OUTDIR/$APP_NAME-Setup-$VERSION.exe"
ARGS=(-V2 -NOCD
	"-DVERSION=$VERSION"
	"-DNUMVER=$(numeric_version "$VERSION")"
	"-DEXE=$(native_path "$EXE")"
	"-DICON=$(native_path "$WORK/llamatray.ico")"
	"-DOUTFILE=$(native_path "$OUTFILE")"
	"-DTARGET=${NSIS_TARGET:=amd64-unicode}")
if [[ -n "${LLAMA_SERVER_DIR:-}" ]]; then
	[[ -f "$LLAMA_SERVER_DIR/llama-server.exe" ]] || die "LLAMA_SERVER_DIR=$LLAMA_SERVER_DIR has no llama-server.exe"
	ARGS+=("-DLLAMA_SERVER_DIR=$(native_path "$(cd "$LLAMA_SERVER_DIR" && pwd)")")
	log "bundling llama-server from $LLAMA_SERVER_DIR"
fi
makensis "${ARGS[@]}" "$(native_path "$PACKAGING_DIR/windows/llamatray.nsi")" >&2

if command -v file >/dev/null 2>&1; then
	# What file(1) says of the target's executables: 64-bit for amd64-*, 32-bit for x86-*.
	want="PE32 executable*Intel 80386*"
	[[ "$NSIS_TARGET" != amd64-* ]] || want="PE32+ executable*x86-64*"
	desc="$(file -b "$OUTFILE")"
	# shellcheck disable=SC2053 # want is a glob
	[[ "$desc" == $want ]] || die "$OUTFILE is not a $NSIS_TARGET Windows executable: $desc"
fi
log "wrote $OUTFILE ($(wc -c <"$OUTFILE" | tr -d ' ') bytes)"
echo "$OUTFILE"
