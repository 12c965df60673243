#!/usr/bin/env bash
# Everything of the GPU paths that needs a CUDA device, in one go, within a
# time budget (GPU machines are lent minutes at a time; leave room to rerun):
#   1. build the GPU targets with CUDA and NCCL required (or use a build
#      directory given with --build DIR, e.g. one made on another machine);
#   2. the GPU tests: the kernels' host math, the device tests (fill,
#      checksum, FP8 vs the CPU reference, staging, the CUDA shard memory,
#      IPC, NCCL), the nccl backend's, the executor with its shards in CUDA
#      memory, and `tide bench gpu`'s CLI test; on a GPU machine a
#      "no CUDA device" skip is a failure;
#   3. `tide sync --device-memory`: p2p and broadcast between processes over
#      shm and tcp, per tensor and bucketed, bit-exact from GPU to GPU
#      (tests/harness/sync_device_cli_test.sh gpu), and one p2p and one
#      broadcast update kept as results/gpu/sync-device-{p2p,broadcast}.json;
#   4. `tide bench gpu` (4 KiB .. 1 GiB) into results/gpu/bench-gpu.json.
# Everything it prints goes to results/gpu/gpu-check.log too.
#
#   scripts/gpu-check.sh [--budget SECONDS] [--build DIR] [--max-size SIZE]
#   scripts/gpu-check.sh --stage DIR [--build DIR]
#
# Exit 0 when all passed, 1 on a failure or the budget running out, 77 with
# "skipped: no CUDA device" where nvidia-smi sees no GPU. --stage (no GPU
# needed) copies the binaries it runs, stripped (about 9 MB), from a build
# (default: build) into DIR with the build's layout, for a GPU machine that
# should not spend its minutes compiling: run it there with --build DIR (it
# needs the same shared libraries; the script checks with ldd).
set -uo pipefail
cd "$(dirname "$0")/.."
BUDGET=420
BUILD=
MAX=1GiB
STAGE=
while [ $# -gt 0 ]; do
  case $1 in
    --budget) BUDGET=$2; shift 2 ;;
    --build) BUILD=$2; shift 2 ;;
    --max-size) MAX=$2; shift 2 ;;
    --stage) STAGE=$2; shift 2 ;;
    *) echo "usage: $0 [--budget SECONDS] [--build DIR] [--max-size SIZE] | --stage DIR [--build DIR]" >&2; exit 2 ;;
  esac
done
BINARIES="tide tests/engine/gpu/gpu_math_test tests/engine/gpu/gpu_device_test
  tests/engine/gpu/gpu_ipc_peer tests/engine/transport/nccl_test
  tests/engine/exec/device_executor_test"
if [ -n "$STAGE" ]; then
  from=${BUILD:-build}
  for b in $BINARIES; do
    [ -x "$from/$b" ] || { echo "FAIL: $from/$b not built (a CUDA + NCCL build)"; exit 1; }
    mkdir -p "$STAGE/$(dirname "$b")"
    strip -o "$STAGE/$b" "$from/$b" || exit 1
  done
  du -sh "$STAGE"
  exit 0
fi
start=$(date +%s)
left() { echo $((BUDGET - ($(date +%s) - start))); }
rc=0
step() { echo "== $* ($(left) s left)"; }

if ! command -v nvidia-smi > /dev/null || ! nvidia-smi -L 2> /dev/null | grep -q '^GPU'; then
  echo "skipped: no CUDA device (nvidia-smi lists none)"
  exit 77
fi
OUT=results/gpu
mkdir -p "$OUT"
exec > >(tee "$OUT/gpu-check.log") 2>&1
nvidia-smi --query-gpu=name,driver_version,memory.total,pci.bus_id --format=csv
nvcc --version 2> /dev/null | tail -2

if [ -z "$BUILD" ]; then
  BUILD=build-gpu
  step "build ($BUILD)"
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTIDE_WITH_CUDA=ON \
    -DTIDE_WITH_NCCL=ON -DTIDE_FUZZ_TESTS=OFF > "$OUT/cmake.log" 2>&1 ||
    { tail -30 "$OUT/cmake.log"; echo "FAIL: cmake"; exit 1; }
  timeout "$(left)" cmake --build "$BUILD" -j "$(nproc)" --target tide gpu_math_test \
    gpu_device_test gpu_ipc_peer nccl_test device_executor_test > "$OUT/build.log" 2>&1 ||
    { tail -40 "$OUT/build.log"; echo "FAIL: build"; exit 1; }
fi
BUILD=$(cd "$BUILD" && pwd)
T=$BUILD/tests/engine
for b in $BINARIES; do
  if [ -x "$BUILD/$b" ] && ldd "$BUILD/$b" | grep -q "not found"; then
    ldd "$BUILD/$b" | grep "not found"
    echo "FAIL: $BUILD/$b lacks shared libraries here"
    exit 1
  fi
done
export TIDE_GPU_IPC_PEER=$T/gpu/gpu_ipc_peer

# A Google Test binary with a time limit; any skip for a missing device fails.
gtest() {
  local name=$1 bin=$2 limit=$3
  step "$name"
  if [ ! -x "$bin" ]; then echo "FAIL: $bin not built"; rc=1; return; fi
  timeout "$limit" "$bin" --gtest_output="xml:$OUT/$name.xml" 2>&1 | tail -40
  local r=${PIPESTATUS[0]}
  [ "$r" = 0 ] || { echo "FAIL: $name exit $r"; rc=1; }
  if grep -q 'no CUDA device' "$OUT/$name.xml" 2> /dev/null; then
    echo "FAIL: $name skipped for 'no CUDA device' on a GPU machine"
    rc=1
  fi
}
gtest gpu_math_test "$T/gpu/gpu_math_test" 120
gtest gpu_device_test "$T/gpu/gpu_device_test" 180
gtest nccl_test "$T/transport/nccl_test" 120
gtest device_executor_test "$T/exec/device_executor_test" 120

step "tide sync --device-memory (sync_device_cli_test.sh gpu)"
timeout 240 bash tests/harness/sync_device_cli_test.sh "$BUILD/tide" gpu
r=$?
[ "$r" = 0 ] || { echo "FAIL: sync_device_cli_test gpu exit $r (77: skipped on a GPU machine)"; rc=1; }
for s in p2p broadcast; do
  step "tide sync --device-memory --strategy $s"
  timeout 120 "$BUILD/tide" sync --model tiny-moe --train tp=2,pp=2,ep=2 \
    --infer engines=2,tp=2,ep=2 --cluster h100-ib-8x400:nodes=2 --ranks processes --backend shm \
    --strategy "$s" --steps 3 --poison --device-memory --staging bucketed \
    --json "$OUT/sync-device-$s.json" || { echo "FAIL: sync --device-memory $s (exit $?)"; rc=1; }
done

step "gpu_bench_cli_test"
timeout 180 bash tests/harness/gpu_bench_cli_test.sh "$BUILD/tide" ||
  { echo "FAIL: gpu_bench_cli_test"; rc=1; }

limit=$(($(left) - 15))
if [ "$limit" -lt 30 ]; then
  echo "FAIL: budget spent before the bench"
  exit 1
fi
step "tide bench gpu --max-size $MAX"
timeout "$limit" "$BUILD/tide" bench gpu --max-size "$MAX" --json "$OUT/bench-gpu.json" ||
  { echo "FAIL: tide bench gpu (exit $?)"; rc=1; }
echo "== done in $(($(date +%s) - start)) s: $([ $rc = 0 ] && echo all passed || echo FAILED)"
exit $rc
