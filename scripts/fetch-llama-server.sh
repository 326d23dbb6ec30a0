#!/usr/bin/env bash
# Fetches a real llama-server for Linux x86-64 from Debian's unstable suite into a
# cache folder outside the repository, without installing anything system-wide
# (patchelf aside, which is installed with apt-get if missing).
#
# Usage: scripts/fetch-llama-server.sh
# Environment:
#   LLAMATRAY_CACHE   cache root (default $HOME/.cache/llamatray-dev)
#   FORCE=1           fetch again even if a working copy is cached
#   (always)          llama.cpp's RPC backend libggml-rpc.so beside the binary (for --rpc) and
#                     its RPC worker as the wrapper <cache>/llama-server/bin/ggml-rpc-server
#                     (issue #24's workers: `llamatray worker` runs it, bound to 127.0.0.1)
#   VULKAN=1          also give it a Vulkan device: Debian's ggml Vulkan backend with Mesa's
#                     lavapipe (a Vulkan driver that runs on the CPU), in a folder of its own,
#                     <cache>/llama-server-vulkan; its wrapper is printed instead (see
#                     scripts/fetch-vulkan.sh)
#
# The last line printed on stdout is the path of the wrapper script
# <cache>/llama-server/bin/llama-server, which sets LD_LIBRARY_PATH and
# GGML_BACKEND_PATH and execs the unpacked, patched binary.
set -euo pipefail

CACHE_ROOT="${LLAMATRAY_CACHE:-$HOME/.cache/llamatray-dev}"
DEST="$CACHE_ROOT/llama-server"
WRAPPER="$DEST/bin/llama-server"
SUITE="sid"
RPC_WRAPPER="$DEST/bin/ggml-rpc-server"
PACKAGES=(llama.cpp-tools llama.cpp-tools-extra libggml0-backend-rpc libllama0 libggml0 libc6 libstdc++6 libgcc-s1 libgomp1
	libssl3t64 libzstd1 zlib1g)

log() { echo "fetch-llama-server: $*" >&2; }
die() {
	log "error: $*"
	exit 1
}

if [[ -n "${VULKAN:-}" ]]; then
	CPU_WRAPPER="$(VULKAN= bash "${BASH_SOURCE[0]}" | tail -n1)"
	exec bash "$(dirname "${BASH_SOURCE[0]}")/fetch-vulkan.sh" "$CPU_WRAPPER"
fi

# Fast path: a wrapper that already answers --version, with the RPC backend and worker beside it.
if [[ -z "${FORCE:-}" && -x "$WRAPPER" && -x "$RPC_WRAPPER" ]] && "$WRAPPER" --version >/dev/null 2>&1 &&
	[[ -f "$(sed -n 's/^exec "\([^"]*\)".*/\1/p' "$WRAPPER" | xargs dirname)/libggml-rpc.so" ]] &&
	[[ -f "$(sed -n 's/^exec "\([^"]*\)".*/\1/p' "$RPC_WRAPPER" | xargs dirname)/libggml-rpc.so" ]]; then
	echo "$WRAPPER"
	exit 0
fi

# shellcheck source=private-apt.sh
source "$(dirname "${BASH_SOURCE[0]}")/private-apt.sh"
[[ "$(uname -m)" == "x86_64" ]] || die "only Linux x86-64 is supported (this is $(uname -m))"

mkdir -p "$CACHE_ROOT"
WORK="$(mktemp -d "$CACHE_ROOT/fetch.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

need_patchelf
private_apt_init "$WORK/apt" "$SUITE"

UNPACK="$WORK/root"
mkdir -p "$UNPACK"
download_unpack "$UNPACK" "${PACKAGES[@]}"

BIN="$UNPACK/usr/bin/llama-server"
[[ -x "$BIN" ]] || BIN="$(find "$UNPACK" -type f -name llama-server -perm -u+x | head -n1)"
[[ -n "$BIN" && -x "$BIN" ]] || die "llama-server not found in llama.cpp-tools"
LOADER="$(find "$UNPACK" -name 'ld-linux-x86-64.so.2' | head -n1)"
[[ -n "$LOADER" ]] || die "ld-linux-x86-64.so.2 not found in libc6"
RPC_BIN="$(find "$UNPACK" -type f -name ggml-rpc-server -perm -u+x | head -n1)"
[[ -n "$RPC_BIN" ]] || die "ggml-rpc-server not found in llama.cpp-tools-extra"
RPC_BACKEND="$(find "$UNPACK" -type f -name 'libggml-rpc.so' | head -n1)"
[[ -n "$RPC_BACKEND" ]] || die "libggml-rpc.so not found in libggml0-backend-rpc"

# missing_libs: libraries the unpacked loader cannot resolve for the binary.
missing_libs() {
	local path
	path="$(lib_dirs "$UNPACK" | paste -sd:)"
	for b in "$BIN" "$RPC_BIN" "$RPC_BACKEND"; do
		"$LOADER" --library-path "$path" --list "$b" 2>&1 | awk '/not found/ {print $1}'
	done | sort -u
}

# Resolve what the unpacked loader cannot find by the packages such libraries usually ship in.
resolve_libs "$UNPACK" 3

# Pick the CPU backend: try the variants from the most capable down and keep the
# first one that ggml accepts on this CPU. ggml refuses a variant whose
# instructions the CPU lacks ("no backends are loaded"), so a load of a missing
# model file tells: with a usable backend the server gets as far as opening the
# file. The binary runs through the unpacked loader here, before it is patched.
BACKEND_DIR="$(find "$UNPACK" -type d -name 'backends0' | head -n1)"
[[ -n "$BACKEND_DIR" ]] || die "no ggml backends folder found"
variants=()
for so in "$BACKEND_DIR"/libggml-cpu-*.so; do
	[[ -e "$so" ]] && variants+=("$(basename "$so")")
done
[[ ${#variants[@]} -gt 0 ]] || die "no libggml-cpu-*.so in $BACKEND_DIR"
order=(sapphirerapids zen4 icelake cooperlake cascadelake cannonlake skylakex alderlake
	haswell piledriver ivybridge sandybridge sse42 x64)
ranked=()
for o in "${order[@]}"; do
	for v in "${variants[@]}"; do
		[[ "$v" == "libggml-cpu-$o.so" ]] && ranked+=("$v")
	done
done
for v in "${variants[@]}"; do
	[[ " ${ranked[*]} " == *" $v "* ]] || ranked+=("$v")
done
log "cpu flags include: $(grep -m1 '^flags' /proc/cpuinfo | grep -ow 'avx2\|avx512f\|avx512_bf16\|avx512_vnni\|avx_vnni\|amx_tile' | sort -u | paste -sd' ')"

STAGE_LIBPATH="$(lib_dirs "$UNPACK" | paste -sd:)"
probe_model="$WORK/absent-model.gguf"
chosen=""
for v in "${ranked[@]}"; do
	out="$(GGML_BACKEND_PATH="$BACKEND_DIR/$v" "$LOADER" --library-path "$STAGE_LIBPATH" "$BIN" \
		-m "$probe_model" --host 127.0.0.1 --port 0 2>&1 </dev/null || true)"
	if grep -q 'failed to open GGUF file' <<<"$out" && ! grep -q 'no backends are loaded' <<<"$out"; then
		chosen="$v"
		break
	fi
	log "backend $v does not run here"
done
[[ -n "$chosen" ]] || die "no CPU backend runs on this machine"
log "using backend $chosen"

# Patch the binary and write the wrapper in a staging folder, with the paths
# they will have once moved into place; then swap it in, so a failure before
# this point leaves any previous copy untouched.
FINAL="$DEST/root"
rel() { echo "${1#"$UNPACK"/}"; }
patchelf --set-interpreter "$FINAL/$(rel "$LOADER")" "$BIN"
patchelf --set-interpreter "$FINAL/$(rel "$LOADER")" "$RPC_BIN"
# ggml loads the backends beside the executable: the RPC backend goes beside llama-server (for
# --rpc) and beside ggml-rpc-server (which will not start without it).
cp "$RPC_BACKEND" "$(dirname "$BIN")/"
cp "$RPC_BACKEND" "$(dirname "$RPC_BIN")/"
LIBPATH="$(lib_dirs "$UNPACK" | sed "s#^$UNPACK#$FINAL#" | paste -sd:)"
STAGE="$WORK/stage"
mkdir -p "$STAGE/bin"
WRAPPER_STAGE="$STAGE/bin/llama-server"
cat >"$WRAPPER_STAGE" <<WRAP
#!/bin/sh
# Generated by scripts/fetch-llama-server.sh: runs the llama-server unpacked from
# Debian $SUITE with its own libraries and the CPU backend chosen for this machine
# (LLAMATRAY_GGML_BACKEND overrides it).
LD_LIBRARY_PATH="$LIBPATH\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
GGML_BACKEND_PATH="\${LLAMATRAY_GGML_BACKEND:-$FINAL/$(rel "$BACKEND_DIR")/$chosen}"
export LD_LIBRARY_PATH GGML_BACKEND_PATH
exec "$FINAL/$(rel "$BIN")" "\$@"
WRAP
chmod +x "$WRAPPER_STAGE"
cat >"$STAGE/bin/ggml-rpc-server" <<WRAP
#!/bin/sh
# Generated by scripts/fetch-llama-server.sh: llama.cpp's RPC worker from Debian $SUITE
# (llama.cpp-tools-extra) with the same libraries and CPU backend as llama-server beside it.
LD_LIBRARY_PATH="$LIBPATH\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
GGML_BACKEND_PATH="\${LLAMATRAY_GGML_BACKEND:-$FINAL/$(rel "$BACKEND_DIR")/$chosen}"
export LD_LIBRARY_PATH GGML_BACKEND_PATH
exec "$FINAL/$(rel "$RPC_BIN")" "\$@"
WRAP
chmod +x "$STAGE/bin/ggml-rpc-server"
mv "$UNPACK" "$STAGE/root"

rm -rf "$DEST.old"
if [[ -e "$DEST" ]]; then mv "$DEST" "$DEST.old"; fi
mv "$STAGE" "$DEST"
rm -rf "$DEST.old"

"$WRAPPER" --version >&2 || die "the wrapper $WRAPPER does not run"
# Its whole help is read before grep looks at it: with pipefail, `grep -q` leaving early would fail
# the check when the worker is killed by SIGPIPE writing the rest.
rpc_help="$("$RPC_WRAPPER" --help 2>&1 || true)"
grep -q -- '--host' <<<"$rpc_help" || die "the wrapper $RPC_WRAPPER does not run: $rpc_help"
echo "$WRAPPER"
