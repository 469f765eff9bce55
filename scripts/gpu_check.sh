#!/usr/bin/env bash
# Everything a GPU check needs, in one run on the GPU machine (whose tool allows 10 minutes per command):
#
#   bash scripts/gpu_carry.sh                     # here, once: the Debian packages the build needs (.gpu-carry/)
#   device run, carry [".gpu-carry"]: bash scripts/gpu_check.sh        # there; results land in $OUT
#
#   bash scripts/gpu_check.sh [--cpu] [--build-dir DIR] [--tests REGEX] [--step-cost-args "..."] [OUTDIR]
#
# Steps, each with its seconds and exit status in OUTDIR/summary.json and its log in OUTDIR/logs.txt (four
# files in all: the device tool brings back at most eight):
#   prefix     unpack .gpu-carry/debs into a private prefix when this machine lacks the packages (the GPU
#              machine has no MPI, HDF5 headers, spdlog, yaml-cpp or GoogleTest)
#   configure  CMake against this machine's own torch (-DVISPEC_PYTHON=python3)
#   build      all cores
#   demo_fp32, demo_bf16   jobs/demo.yaml on the GPU (device cuda), then with --set model.dtype=bf16
#   step_cost  vispec step-cost: AR ms per token against the bandwidth floor, both models, fp32 and bf16
#   tests      the whole CTest suite, CUDA visible (CUDA tests skip, visibly, where no GPU is); last, so that
#              the figures above come back even if a time limit cuts the suite short
# --cpu: the same steps without CUDA (CUDA_VISIBLE_DEVICES hidden, device cpu), e.g. on the CPU machine with
# its existing build directory; the CTest suite runs this (tests/gpu_check_cpu.sh) so that the script cannot
# rot. --tests REGEX runs only the matching tests (ctest -R); --step-cost-args adds options to vispec step-cost
# (e.g. "--batches 1"). OUTDIR defaults to $OUT, else out/gpu-check.
# Exits non-zero if any step failed; the summary says which.
set -uo pipefail
cd "$(dirname "$0")/.."
src=$(pwd)

cpu=0 build="" tests_regex="" outdir="" step_cost_args=""
while [ $# -gt 0 ]; do
  case "$1" in
    --cpu) cpu=1 ;;
    --build-dir) build=$2; shift ;;
    --tests) tests_regex=$2; shift ;;
    --step-cost-args) step_cost_args=$2; shift ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
    -*) echo "gpu_check: unknown option $1" >&2; exit 2 ;;
    *) outdir=$1 ;;
  esac
  shift
done
outdir=${outdir:-${OUT:-out/gpu-check}}
mkdir -p "$outdir"
outdir=$(cd "$outdir" && pwd)
logs=$(mktemp -d)  # per-step logs and the demo outputs; logs.txt gathers the logs at the end
build=${build:-$src/build-gpu-check}
jobs=$(nproc)
if [ $cpu = 1 ]; then
  export CUDA_VISIBLE_DEVICES=""
  device=cpu
else
  device=cuda
fi

steps_json=""
failed=0
started=$(date +%s)
# step NAME COMMAND...: runs COMMAND with its output in $logs/NAME.log, records seconds and exit status.
step() {
  local name=$1; shift
  local t0 rc
  t0=$(date +%s.%N)
  echo "gpu_check: $name ..."
  "$@" > "$logs/$name.log" 2>&1
  rc=$?
  local seconds
  seconds=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  [ $rc = 0 ] || { failed=1; echo "gpu_check: $name FAILED (exit $rc); the end of its log:"; tail -n 30 "$logs/$name.log"; }
  steps_json="$steps_json${steps_json:+,}\"$name\": {\"seconds\": $seconds, \"exit\": $rc}"
  echo "gpu_check: $name exit $rc, $seconds s"
  return $rc
}

# --- summary: written however the script ends (a failed configure or build stops it early) -----------------
tests_line="" skipped=0 torch_python="" gpu=""
json_or_null() { [ -f "$1" ] && cat "$1" || echo null; }
write_summary() {
  {
    echo "{"
    echo "  \"mode\": \"$([ $cpu = 1 ] && echo cpu || echo cuda)\","
    echo "  \"torch_python\": \"$torch_python\","
    echo "  \"gpu\": \"$gpu\","
    echo "  \"cores\": $jobs,"
    echo "  \"tests\": \"$tests_line\", \"tests_skipped\": $skipped,"
    echo "  \"steps\": {$steps_json},"
    echo "  \"demo_fp32\": $(json_or_null "$logs/demo-fp32/summary.json"),"
    echo "  \"demo_bf16\": $(json_or_null "$logs/demo-bf16/summary.json"),"
    echo "  \"step_cost\": $(json_or_null "$outdir/step-cost-$device.json"),"
    echo "  \"seconds\": $(( $(date +%s) - started )), \"failed\": $failed"
    echo "}"
  } > "$outdir/summary.json"
  for f in "$logs"/*.log; do [ -f "$f" ] && { printf '\n===== %s =====\n' "$(basename "$f")"; cat "$f"; }; done > "$outdir/logs.txt"
  echo "gpu_check: ${tests_line:-tests did not run}; summary in $outdir/summary.json"
  rm -rf "$logs"
}
trap write_summary EXIT
trap 'failed=1; exit 143' TERM  # a timeout's SIGTERM still writes the summary, marked failed

# --- The Python whose torch we build against, and the one the script tests read outputs with -------------
torch_python=${VISPEC_PYTHON:-}
if [ -z "$torch_python" ]; then
  for p in "$src/.venv/bin/python3" python3; do
    if "$p" -c "import torch" 2> /dev/null; then torch_python=$(command -v "$p"); break; fi
  done
fi
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2> /dev/null | head -1)
[ -n "$torch_python" ] || { echo "gpu_check: no python3 with torch (run scripts/setup.sh, or set VISPEC_PYTHON)" >&2; exit 2; }
test_python=""
for p in python3 /usr/bin/python3 "$torch_python"; do
  if "$p" -c "import h5py, numpy" 2> /dev/null; then test_python=$(command -v "$p"); break; fi
done
[ -n "$test_python" ] || { echo "gpu_check: no python3 with h5py and numpy for the script tests" >&2; exit 2; }

# --- prefix: the carried Debian packages, where this machine lacks them ------------------------------------
use_prefix() {
  local prefix=$1 carry=$src/.gpu-carry
  [ -d "$carry/debs" ] || { echo "no $carry/debs: run scripts/gpu_carry.sh where a registry is reachable"; return 1; }
  rm -rf "$prefix" && mkdir -p "$prefix/fallback"
  for f in "$carry"/debs/*.deb; do dpkg -x "$f" "$prefix" || return 1; done
  # A fallback library only where the machine has none of that name: its own is built for it.
  local tmp
  tmp=$(mktemp -d)
  for f in "$carry"/debs/fallback/*.deb; do dpkg -x "$f" "$tmp" || return 1; done
  for lib in $(find "$tmp" -name 'lib*.so.*' \( -type f -o -type l \)); do
    local name
    name=$(basename "$lib")
    ldconfig -p | grep -q " $name " || cp -a "$lib" "$prefix/fallback/"
  done
  rm -rf "$tmp"
  local usr=$prefix/usr arch=$prefix/usr/lib/x86_64-linux-gnu
  # Debian links mpirun and mpicc through update-alternatives, which dpkg -x does not run.
  for tool in mpirun mpiexec mpicc; do ln -sf "$tool.openmpi" "$usr/bin/$tool"; done
  echo "unpacked $(ls "$carry"/debs/*.deb | wc -l) packages into $prefix; fallback libraries used: $(ls "$prefix/fallback" | tr '\n' ' ')"
}
cmake_extra=()
if [ -f /usr/include/hdf5/serial/hdf5.h ] && command -v mpirun > /dev/null && [ -d /usr/include/spdlog ]; then
  echo "gpu_check: this machine has the Debian packages; no prefix needed"
else
  prefix=${VISPEC_PREFIX:-/tmp/vispec-prefix}
  step prefix use_prefix "$prefix" || exit 1
  usr=$prefix/usr
  arch=$usr/lib/x86_64-linux-gnu
  export PATH=$usr/bin:$PATH
  export OPAL_PREFIX=$usr  # OpenMPI finds its plugins and help files under the relocated prefix
  # One machine, no ssh: OpenMPI's launcher for a single node, else it refuses to start without an rsh agent.
  command -v ssh > /dev/null || command -v rsh > /dev/null || export OMPI_MCA_plm=isolated
  # Some Debian packages still install into /lib rather than /usr/lib (libnl, libkeyutils, ...).
  export LD_LIBRARY_PATH=$arch:$arch/openmpi/lib:$arch/hdf5/serial:$prefix/lib/x86_64-linux-gnu:$prefix/fallback${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export VISPEC_FASHION_MNIST_DIR=$src/.gpu-carry/fashion-mnist
  # HDF5 from the prefix's files, not from its h5cc (a script that names /usr).
  cmake_extra=(-DCMAKE_PREFIX_PATH="$usr" -DHDF5_C_COMPILER_EXECUTABLE=/nonexistent/h5cc)
fi

# --- configure, build -----------------------------------------------------------------------------------------
step configure cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release -DVISPEC_PYTHON="$torch_python" \
  -DVISPEC_TEST_PYTHON="$test_python" "${cmake_extra[@]}" || exit 1
step build cmake --build "$build" -j"$jobs" || exit 1
vispec=$build/vispec
# --- demo in fp32 and bf16, step cost, then the test suite: the figures first, should the suite run long -----
step demo_fp32 "$vispec" run jobs/demo.yaml --out "$logs/demo-fp32" --new --set device=$device
step demo_bf16 "$vispec" run jobs/demo.yaml --out "$logs/demo-bf16" --new --set device=$device --set model.dtype=bf16
# shellcheck disable=SC2086  # step_cost_args is a list of options
step step_cost "$vispec" step-cost --device $device --results "$outdir" $step_cost_args

ctest_args=(--test-dir "$build" --output-on-failure -j"$jobs" -E gpu_check_cpu)
[ -n "$tests_regex" ] && ctest_args+=(-R "$tests_regex")
step tests ctest "${ctest_args[@]}"
tests_line=$(grep -E "tests passed|tests failed" "$logs/tests.log" | tail -1)
skipped=$(grep -c "Skipped" "$logs/tests.log")

exit $failed
