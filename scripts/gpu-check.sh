#!/usr/bin/env bash
# The engine's checks on a machine with a real GPU, in one run (no network needed):
#   1. what Llamatray's memory probe reads of the GPUs (NVML, the driver's library loaded at run time,
#      else nvidia-smi), beside nvidia-smi's own figures;
#   2. the simulated workload (`make sim`'s mix, router/testbed/chaos) on a machine described from
#      those readings, with every per-device check;
#   3. when a llama-server built for the GPU is given (LLAMA_SERVER_GPU: a CUDA or ROCm build, e.g.
#      Debian's llama.cpp-tools with libggml0-backend-cuda beside it), two real-size random models
#      that together exceed the device's budget, fully offloaded: the second waits for or evicts the
#      first, never both on the device; the footprint learned per device equals the child's own
#      buffer lines; a small model starts beside one of them (the e2e test TestGPUDeviceBudget).
#
#   scripts/gpu-check.sh [OUT_DIR]        (figures in OUT_DIR: probe.txt, machine.json, sim.txt, device.txt)
#
# Environment for step 3: LLAMATRAY_GPU_DEVICE (CUDA0), LLAMATRAY_GPU_LIMIT_MIB (6144: the budget the
# two big models do not fit in together; the device's real memory can be far larger than a disk of
# random models), LLAMATRAY_GPU_BIG (2048x16: ~4.3 GB of F32 weights each), LLAMATRAY_GPU_SMALL (512x4).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-$(mktemp -d /tmp/llamatray-gpu-check-XXXXXX)}
mkdir -p "$out"
if ! command -v nvidia-smi >/dev/null && ! ls /sys/class/drm/card*/device/mem_info_vram_total >/dev/null 2>&1; then
	echo "gpu-check: no GPU here (no nvidia-smi, no amdgpu); nothing to check" >&2
	exit 2
fi
command -v nvidia-smi >/dev/null && nvidia-smi | tee "$out/nvidia-smi.txt"

echo "== 1. the memory probe"
go run ./router/testbed/gpucheck ${LLAMA_SERVER_GPU:+-llama-server "$LLAMA_SERVER_GPU"} -machine "$out/machine.json" | tee "$out/probe.txt"

echo "== 2. the simulated workload on this machine's sizes"
go run ./router/testbed/chaos -sim -machine "$out/machine.json" | tee "$out/sim.txt"

if [ -n "${LLAMA_SERVER_GPU:-}" ]; then
	echo "== 3. two real-size models on ${LLAMATRAY_GPU_DEVICE:=CUDA0} with a ${LLAMATRAY_GPU_LIMIT_MIB:=6144} MiB budget"
	LLAMATRAY_GPU_DEVICE=$LLAMATRAY_GPU_DEVICE LLAMATRAY_GPU_LIMIT_MIB=$LLAMATRAY_GPU_LIMIT_MIB \
		LLAMATRAY_GPU_BIG=${LLAMATRAY_GPU_BIG:-2048x16} LLAMATRAY_GPU_SMALL=${LLAMATRAY_GPU_SMALL:-512x4} \
		LLAMA_SERVER_GPU=$LLAMA_SERVER_GPU go test -count=1 -timeout 30m -v -run TestGPUDeviceBudget ./router/e2e/ 2>&1 |
		grep -E "device:|learned|figures:|^(--- |PASS|FAIL|ok)" | tee "$out/device.txt"
else
	echo "== 3. skipped: set LLAMA_SERVER_GPU to a llama-server built for this GPU to load real models on it"
fi
echo "gpu-check: figures in $out"
