#!/usr/bin/env bash
# shellcheck disable=SC2317  # functions that run from traps and through run_limited
# Everything a GPU check needs, in one run on the GPU machine (the device tool allows 10 minutes per command and
# about 15 in all, the machine's start included):
#
#   bash scripts/gpu_carry.sh      # here, after a Release build: the binaries, Debian packages, data (.gpu-carry/)
#   device run, carry [".gpu-carry"], timeout_s 300: bash scripts/gpu_check.sh --quick    # there; results in $OUT
#
#   bash scripts/gpu_check.sh [--quick] [--cpu] [--binaries DIR] [--build-dir DIR] [--tests REGEX]
#                             [--step-cost-args "..."] [--break-even-args "..."] [--throughput-args "..."]
#                             [--bench-set KEY=VALUE]...
#                             [--demo-set KEY=VALUE]...
#                             [--skip STEP[,STEP...]] [--also COMMAND]... [--deadline SECONDS] [OUTDIR]
#   bash scripts/gpu_check.sh --deps-only [--binaries DIR]   # prints the decisions below as JSON, and exits
#
# What comes from where, decided one by one (a machine may have MPI, HDF5 and spdlog but no pcre2.h):
#   deps   per dependency (mpi hdf5 spdlog fmt yaml-cpp nlohmann-json cli11 gtest png jpeg zlib sentencepiece pcre2
#          utf8proc fashion-mnist): "machine" when every header, link library, CMake package and tool the build
#          and the tests need is on the machine (under /usr, or on PATH), else "prefix": .gpu-carry/debs/DEP,
#          unpacked with dpkg -x into /tmp/vispec-prefix/DEP, which a fallback build finds through
#          CMAKE_PREFIX_PATH (one root per dependency, so that a prefix include directory never shadows the
#          machine's headers of another dependency)
#   libs   per shared library the binaries need (readelf NEEDED, followed through the prefix's own libraries):
#          "torch" (the machine's torch package), "machine" (its loader finds it: ldconfig -p), else "prefix": a
#          link in one private directory on LD_LIBRARY_PATH, which therefore never shadows a machine library
# Binaries: --binaries DIR (vispec and tests/vispec_tests, e.g. a build directory), else the carried ones
# (.gpu-carry/bin, built here in Release, unpacked into /tmp/vispec-prefix-bin), run against this machine's own
# torch (LD_LIBRARY_PATH: RUNPATH names the .venv of the machine that built them); configure and build (~3
# minutes on 16 cores) only when there are none or they do not start. summary.json says which ("binaries":
# carried | prebuilt | built, and why).
#
# Steps, each under `timeout` with its own budget, all within --deadline (default 360 s with --quick, so that a
# quick run and a short rerun fit the device time of a session, their machine's start included; 580 s otherwise, inside
# the tool's 10 minutes per command; with --cpu three times those, as every step's budget), each with its seconds
# and exit status in OUTDIR/summary.json and its log in OUTDIR/logs.txt (the device tool brings back at
# most eight files: here summary.json, logs.txt, step-cost-DEVICE.json and .md, and with --quick
# step-profile-DEVICE.json and .md, gpu-quick.md (the three benches) and figures.md). Last, scripts/gpu_figures.py
# adds "figures" to the summary and writes figures.md: every figure of the GPU-speed targets beside its target
# (AR per GPT-XL token, the demo over the CPU's, the decoders' speedups), "met": true, false or null (not
# measured in this run):
#   prefix       unpack .gpu-carry/debs where the machine lacks a dependency or a library
#   libs         the library decisions above (readelf; LD_LIBRARY_PATH)
#   binaries     the binaries start: `vispec decoders`, `vispec_tests --gtest_list_tests`
#   configure, build   only without binaries that start: CMake against this machine's torch (-DVISPEC_PYTHON)
#   --quick: cuda_tests   vispec_tests --gtest_filter of the CUDA cases and PhaseClock (the gtest summary line)
#            step_cost    vispec step-cost, fp32 and bf16, batches 1, 8, 32, eager and CUDA graphs, 64 AR steps
#            break_even   vispec step-cost --decoders all: every decoder's iteration against AR's step on GPT-XL's
#                         shape, bf16, batches 1, 8 and 32, whole images (bench/break_even.h); its rows are written
#                         as they finish, so a step cut by its budget keeps the batches it measured (in the summary
#                         as "break_even", and in figures.md beside the targets)
#            throughput   vispec step-cost --decoders sd,sjd,ssd,eagle2 at batches 8, 32, 64, 128 and auto (the
#                         largest AR's caches fit): images per second on GPT-XL's shape, AR's against its bandwidth
#                         floor, the others projected (in the summary as "throughput"; the smaller batches first, so
#                         that a step cut by its budget or the deadline keeps them). A quick run's deadline may cut
#                         it: a second call `--skip` of every other step, `--deadline 500`, measures it alone
#            step_profile vispec step-cost --profile-steps 16, bf16, batches 1 and 32, eager and graphs: each step's
#                         device time by kernel (bench/kernel_profile.h)
#            bench_b1, bench_b8, bench_b32   bench/gpu-quick.yaml (AR and eight speculative decoders, 10 images
#                                 each; 40 at batch 32 on a GPU) at batch 1, 8 and 32
#            demo_fp32, demo_bf16, demo_cpu   jobs/demo.yaml on the GPU (device cuda), then with --set
#                                 model.dtype=bf16, then on 2 CPU threads of the same machine (the reference of
#                                 the demo's speedup)
#            memcheck     compute-sanitizer --tool memcheck over the kernel tests (each CUDA kernel beside its
#                         CPU reference), where the machine has the sanitizer and it accepts the device
#   otherwise: demo_fp32, demo_bf16, demo_cpu, step_cost (whole images, the default sizes), then tests: the whole CTest
#            suite where the binaries have a build directory, else the whole of vispec_tests run directly (the
#            summary's tests_runner says which); last, so that the figures come back should the suite run long
# --cpu: the same without CUDA (CUDA_VISIBLE_DEVICES hidden, device cpu, budgets x3, step-cost and the two decoder
# tables on cut shapes unless their args are given); the CTest suite runs
# `--cpu --quick --binaries BUILD` (tests/gpu_check_cpu.sh) so that the script cannot rot. --tests REGEX runs only
# the matching tests (ctest -R, or the matching gtest names); --step-cost-args replaces the step-cost sizes (with
# --quick: "--dtypes fp32,bf16 --batches 1,8,32 --modes eager,graphs --max-steps 64"); --break-even-args the
# break-even table's ("--dtypes bf16 --batches 1,8,32"; e.g. --decoders eagle2,sd for fewer); --throughput-args the
# throughput table's ("--dtypes bf16 --batches 8,32,64,128,auto"); --bench-set overrides a field
# of bench/gpu-quick.yaml in the three runs (vispec bench --set; repeatable; e.g. prompts=FILE, or decoders=[...] with
# fewer); --demo-set likewise for the three demo runs (vispec run --set; e.g. images_per_prompt=20, so that a demo
# lasts long enough to time). --skip names steps not to run (cuda_tests, step_cost, break_even, throughput, step_profile, bench_b1,
# bench_b8, bench_b32, demo_fp32, demo_bf16, demo_cpu, memcheck: the summary records them as skipped), so that a short second
# run measures only what it is for. --also runs COMMAND (bash -c, in the source directory, with $VISPEC,
# $VISPEC_TESTS and $VISPEC_DEVICE set and the libraries found) as a step of its own after the others, for a one-off
# experiment whose output comes back in logs.txt. OUTDIR defaults to $OUT, else out/gpu-check.
# Environment, for tests of the decisions on a machine that lacks things (tests/gpu_check_deps.sh):
#   VISPEC_GPU_CHECK_SYSROOT  where /usr/include, the library directories and the tools are looked up (default /)
#   VISPEC_GPU_CHECK_LDCONFIG a file of `ldconfig -p` output read instead of the machine's loader cache
#   VISPEC_GPU_CARRY          the carried folder (default .gpu-carry); VISPEC_PREFIX where it is unpacked
# Exits non-zero if any step failed; the summary says which.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
src=$(pwd)

cpu=0 quick=0 deps_only=0 build="" binaries_dir="" tests_regex="" outdir="" deadline=""
step_cost_args="" step_cost_args_set=0 break_even_args="--dtypes bf16 --batches 1,8,32" bench_sets=() demo_sets=() skip_steps="," also_commands=()
throughput_args="--dtypes bf16 --batches 8,32,64,128,auto" break_even_args_set=0 throughput_args_set=0
while [ $# -gt 0 ]; do
  case "$1" in
    --cpu) cpu=1 ;;
    --quick) quick=1 ;;
    --deps-only) deps_only=1 ;;
    --binaries) binaries_dir=$(cd "$2" && pwd) || exit 2; shift ;;
    --build-dir) build=$2; shift ;;
    --tests) tests_regex=$2; shift ;;
    --step-cost-args) step_cost_args=$2; step_cost_args_set=1; shift ;;
    --break-even-args) break_even_args=$2; break_even_args_set=1; shift ;;
    --throughput-args) throughput_args=$2; throughput_args_set=1; shift ;;
    --bench-set) bench_sets+=(--set "$2"); shift ;;
    --demo-set) demo_sets+=(--set "$2"); shift ;;
    --skip) skip_steps=",$2,"; shift ;;
    --also) also_commands+=("$2"); shift ;;
    --deadline) deadline=$2; shift ;;
    -h|--help) awk 'NR > 2 { if (!/^#/) exit; print }' "$0"; exit 0 ;;
    -*) echo "gpu_check: unknown option $1" >&2; exit 2 ;;
    *) outdir=$1 ;;
  esac
  shift
done
# On a CPU, GPT-XL's shape (even cut to 4 layers) decoded whole by 13 decoders outlasts any budget: unless told
# otherwise the two decoder tables run on a 1-layer GPT-B-wide shape of 6x6 tokens, which proves their plumbing.
cpu_shape="--dtypes fp32 --xl-preset GPT-B --xl-layers 1 --xl-grid 6 --xl-vocab 512 --mal-samples 3"
if [ $cpu = 1 ]; then
  [ $break_even_args_set = 1 ] || break_even_args="$cpu_shape --batches 1,2"
  [ $throughput_args_set = 1 ] || throughput_args="$cpu_shape --batches 2,auto --auto-batch-limit 3"
fi
sysroot=${VISPEC_GPU_CHECK_SYSROOT:-/}
sysroot=${sysroot%/}  # "" for the machine itself: "$sysroot/usr/include"
ldconfig_file=${VISPEC_GPU_CHECK_LDCONFIG:-}
carry=${VISPEC_GPU_CARRY:-$src/.gpu-carry}
prefix=${VISPEC_PREFIX:-/tmp/vispec-prefix}
arch=x86_64-linux-gnu

# --- deps: what the machine has, dependency by dependency ----------------------------------------------------
deps=(mpi hdf5 spdlog fmt yaml-cpp nlohmann-json cli11 gtest png jpeg zlib sentencepiece pcre2 utf8proc fashion-mnist)
# What "has it" means: every probe holds; a probe is KIND:ALTERNATIVE|ALTERNATIVE. h: a header under an include
# directory, l: a library to link under a library directory, c: a CMake package (find_package in CMakeLists.txt
# needs its config file), t: a tool, f: a file. Where CMakeLists.txt finds them decides the list.
dep_probes() {
  case $1 in
    mpi) echo "h:mpi.h l:libmpi.so t:mpirun" ;;  # the MPI tests run mpirun
    hdf5) echo "h:hdf5/serial/hdf5.h|hdf5.h l:hdf5/serial/libhdf5.so|libhdf5_serial.so|libhdf5.so" ;;
    spdlog) echo "h:spdlog/spdlog.h l:libspdlog.so c:spdlog" ;;
    fmt) echo "h:fmt/format.h l:libfmt.so c:fmt" ;;
    yaml-cpp) echo "h:yaml-cpp/yaml.h l:libyaml-cpp.so c:yaml-cpp" ;;
    nlohmann-json) echo "h:nlohmann/json.hpp c:nlohmann_json" ;;
    cli11) echo "h:CLI/CLI.hpp" ;;
    gtest) echo "h:gtest/gtest.h l:libgtest.a|libgtest.so" ;;
    png) echo "h:png.h l:libpng.so|libpng16.so" ;;
    jpeg) echo "h:jpeglib.h l:libjpeg.so" ;;
    zlib) echo "h:zlib.h l:libz.so" ;;
    sentencepiece) echo "h:sentencepiece_processor.h l:libsentencepiece.so" ;;
    pcre2) echo "h:pcre2.h l:libpcre2-8.so" ;;
    utf8proc) echo "h:utf8proc.h l:libutf8proc.so" ;;
    fashion-mnist) echo "f:usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz" ;;  # the quality judge's
  esac
}
include_dirs=(usr/include usr/local/include "usr/include/$arch" "usr/include/$arch/mpi" "usr/include/$arch/openmpi"
              "usr/lib/$arch/openmpi/include")
lib_dirs=("usr/lib/$arch" usr/lib64 usr/lib "lib/$arch" lib64 usr/local/lib usr/local/lib64 "usr/lib/$arch/openmpi/lib")
cmake_dirs=("usr/lib/$arch/cmake" usr/lib/cmake usr/lib64/cmake usr/share/cmake usr/local/lib/cmake usr/local/share/cmake)
extra_include_dirs=() extra_lib_dirs=()
if [ -z "$sysroot" ] && command -v mpicc > /dev/null; then
  # An MPI outside /usr (HPC-X under /opt, ...) that the machine's mpicc names; FindMPI asks that mpicc too.
  read -ra extra_include_dirs <<< "$(mpicc --showme:incdirs 2> /dev/null)"
  read -ra extra_lib_dirs <<< "$(mpicc --showme:libdirs 2> /dev/null)"
fi
has_one() {  # has_one KIND NAME: the machine (under $sysroot) has NAME of that kind
  local kind=$1 name=$2 d
  case $kind in
    h) for d in "${include_dirs[@]/#/$sysroot/}" "${extra_include_dirs[@]}"; do [ -e "$d/$name" ] && return 0; done ;;
    l) for d in "${lib_dirs[@]/#/$sysroot/}" "${extra_lib_dirs[@]}"; do [ -e "$d/$name" ] && return 0; done ;;
    c) for d in "${cmake_dirs[@]/#/$sysroot/}"; do
         compgen -G "$d/$name*/${name}Config.cmake" > /dev/null && return 0
         compgen -G "$d/$name*/${name,,}-config.cmake" > /dev/null && return 0
       done ;;
    t) if [ -z "$sysroot" ]; then command -v "$name" > /dev/null && return 0
       else for d in usr/bin usr/local/bin bin; do [ -x "$sysroot/$d/$name" ] && return 0; done; fi ;;
    f) [ -e "$sysroot/$name" ] && return 0 ;;
  esac
  return 1
}
declare -A dep_from=() dep_lacks=()
for dep in "${deps[@]}"; do
  lacks=""
  for probe in $(dep_probes "$dep"); do
    kind=${probe%%:*} found=0
    IFS='|' read -ra alternatives <<< "${probe#*:}"
    for name in "${alternatives[@]}"; do has_one "$kind" "$name" && { found=1; break; }; done
    [ $found = 1 ] || lacks="$lacks${lacks:+ }${alternatives[0]}"
  done
  dep_lacks[$dep]=$lacks
  if [ -z "$lacks" ]; then dep_from[$dep]=machine; else dep_from[$dep]=prefix; fi
done
# The prefix's spdlog is built on the prefix's fmt (Debian's fmt 9): its headers and library go together.
if [ "${dep_from[spdlog]}" = prefix ] && [ "${dep_from[fmt]}" = machine ]; then
  dep_from[fmt]=prefix dep_lacks[fmt]="(the prefix's spdlog is built on the prefix's fmt)"
fi
json_str() { printf '"%s"' "$(printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g' | tr '\n\t\r' '   ')"; }
deps_json="" lacks_json=""
for dep in "${deps[@]}"; do
  deps_json="$deps_json${deps_json:+, }\"$dep\": \"${dep_from[$dep]}\""
  [ -n "${dep_lacks[$dep]}" ] && lacks_json="$lacks_json${lacks_json:+, }\"$dep\": $(json_str "${dep_lacks[$dep]}")"
done
prefix_deps=()
for dep in "${deps[@]}"; do [ "${dep_from[$dep]}" = prefix ] && prefix_deps+=("$dep"); done

# --- libs: where each shared library the binaries need comes from ---------------------------------------------
elf_needed() { readelf -d "$1" 2> /dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p'; }
# The sonames the machine's loader finds: its cache, and (on the machine itself) the directories already on
# LD_LIBRARY_PATH, as the loader searches them too.
machine_sonames() {
  if [ -n "$ldconfig_file" ]; then
    awk '/=>/ && /x86-64/ { print $1 }' "$ldconfig_file"
  elif [ -z "$sysroot" ]; then
    { ldconfig -p 2> /dev/null || /sbin/ldconfig -p; } | awk '/=>/ && /x86-64/ { print $1 }'
    local d
    IFS=: read -ra ld_dirs <<< "${LD_LIBRARY_PATH:-}"
    for d in "${ld_dirs[@]}"; do [ -d "$d" ] && find "$d" -maxdepth 1 -name 'lib*.so*' -printf '%f\n'; done
  else
    local d
    for d in "${lib_dirs[@]}"; do [ -d "$sysroot/$d" ] && find "$sysroot/$d" -maxdepth 1 -name 'lib*.so*' -printf '%f\n'; done
  fi | sort -u
}
# resolve_libs LIBDIR JSON MACHINE INDEX TORCH_DIRS FORCED FILE...: follows the NEEDED sonames of FILE... and,
# through every one taken from the prefix, of the prefix's libraries. Each soname comes from (in the order the
# loader searches): torch (TORCH_DIRS, colon-separated, go first on LD_LIBRARY_PATH), the machine (the soname
# list MACHINE), else the prefix (INDEX: "soname path" lines): then a link LIBDIR/soname. FORCED lists sonames
# taken from the prefix even where the machine has them. Writes JSON {"soname": "torch|machine|prefix|missing"}
# and JSON.dirs, the torch directories that provide some soname.
resolve_libs() {
  local libdir=$1 json=$2 machine=$3 index=$4 torch_dirs=$5 forced=$6 f s d path i=0
  shift 6
  rm -rf "$libdir" && mkdir -p "$libdir"
  declare -A from=() used_dirs=()
  local queue=()
  for f in "$@"; do mapfile -t -O "${#queue[@]}" queue < <(elf_needed "$f"); done
  IFS=: read -ra tdirs <<< "$torch_dirs"
  while [ $i -lt ${#queue[@]} ]; do
    s=${queue[$i]} i=$((i + 1)) path=""
    [ -n "${from[$s]:-}" ] && continue
    from[$s]=missing
    if ! grep -qxF "$s" "$forced"; then
      for d in "${tdirs[@]}"; do [ -e "$d/$s" ] && { from[$s]=torch; used_dirs[$d]=1; break; }; done
      [ "${from[$s]}" = missing ] && grep -qxF "$s" "$machine" && from[$s]=machine
    fi
    if [ "${from[$s]}" = missing ]; then
      path=$(awk -v s="$s" '$1 == s { print $2; exit }' "$index")
      if [ -n "$path" ]; then
        from[$s]=prefix
        ln -sfn "$path" "$libdir/$s"
        mapfile -t -O "${#queue[@]}" queue < <(elf_needed "$path")
      fi
    fi
  done
  {
    echo "{"
    local first=1
    for s in $(printf '%s\n' "${!from[@]}" | sort); do
      [ $first = 1 ] || echo ","
      printf '  "%s": "%s"' "$s" "${from[$s]}"
      first=0
    done
    printf '\n}\n'
  } > "$json"
  printf '%s\n' "${!used_dirs[@]}" | sed '/^$/d' > "$json.dirs"
  # A missing one is reported, not an error: the binaries' start check says whether it matters (an OpenMPI
  # plugin for hardware this machine lacks does not).
  echo "libraries: $(grep -c '"torch"' "$json") torch, $(grep -c '"machine"' "$json") machine," \
    "$(grep -c '"prefix"' "$json") prefix ($(ls "$libdir" | tr '\n' ' ')), $(grep -c '"missing"' "$json") missing" \
    "$(grep '"missing"' "$json" | tr -d '\n')"
}
# unpack_carry CARRY PREFIX: every dependency's packages into PREFIX/DEP, the fallback libraries into
# PREFIX/fallback, and an index of the libraries ("soname path", dependencies before fallback) in PREFIX/index.
unpack_carry() {
  local carry=$1 prefix=$2 dir dep f n=0
  [ -d "$carry/debs" ] || { echo "no $carry/debs: run scripts/gpu_carry.sh where a registry is reachable"; return 1; }
  rm -rf "$prefix" && mkdir -p "$prefix"
  for dir in "$carry"/debs/*/; do
    dep=$(basename "$dir")
    for f in "$dir"*.deb; do dpkg -x "$f" "$prefix/$dep" || return 1; n=$((n + 1)); done
  done
  # Debian links mpirun and mpicc through update-alternatives, which dpkg -x does not run.
  if [ -d "$prefix/mpi/usr/bin" ]; then
    for tool in mpirun mpiexec mpicc; do ln -sf "$tool.openmpi" "$prefix/mpi/usr/bin/$tool"; done
  fi
  for dir in "$prefix"/*/; do
    [ "$(basename "$dir")" = fallback ] && continue
    find "$dir" -name 'lib*.so*' \( -type f -o -type l \) -printf '%f %p\n' | sort
  done > "$prefix/index"
  [ -d "$prefix/fallback" ] && find "$prefix/fallback" -name 'lib*.so*' \( -type f -o -type l \) -printf '%f %p\n' | sort >> "$prefix/index"
  echo "unpacked $n packages into $prefix ($(ls "$prefix" | tr '\n' ' '))"
}

# --deps-only: the decisions, without binaries, torch or a GPU (tests/gpu_check_deps.sh); with --binaries, also
# the libraries of those binaries (the carry unpacked where one is there; torch's only if VISPEC_PYTHON or
# python3 has it).
if [ $deps_only = 1 ]; then
  libs_json=null
  if [ -n "$binaries_dir" ]; then
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    machine_sonames > "$work/machine"
    : > "$work/forced"
    libdir=$work/lib index=$work/index
    : > "$index"
    if [ -d "$carry/debs" ]; then
      unpack_carry "$carry" "$prefix" > "$work/unpack.log" 2>&1 || { cat "$work/unpack.log" >&2; exit 1; }
      libdir=$prefix/lib index=$prefix/index
      [ "${dep_from[mpi]}" = prefix ] && grep " $prefix/mpi/" "$index" | awk '{ print $1 }' > "$work/forced"
    fi
    torch_lib=$("${VISPEC_PYTHON:-python3}" -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "lib"))' 2> /dev/null)
    bins=("$binaries_dir/vispec")
    for t in "$binaries_dir/tests/vispec_tests" "$binaries_dir/vispec_tests"; do [ -e "$t" ] && { bins+=("$t"); break; }; done
    resolve_libs "$libdir" "$work/libs.json" "$work/machine" "$index" "$torch_lib" "$work/forced" "${bins[@]}" > /dev/null
    libs_json=$(cat "$work/libs.json")
  fi
  printf '{\n"sysroot": %s,\n"deps": {%s},\n"lacks": {%s},\n"libs": %s,\n"libdir": %s\n}\n' \
    "$(json_str "${sysroot:-/}")" "$deps_json" "$lacks_json" "$libs_json" "$(json_str "${libdir:-}")"
  exit 0
fi

outdir=${outdir:-${OUT:-out/gpu-check}}
mkdir -p "$outdir"
outdir=$(cd "$outdir" && pwd)
logs=$(mktemp -d)  # per-step logs, demo and bench outputs; logs.txt gathers the logs at the end
build=${build:-$src/build-gpu-check}
jobs=$(nproc)
if [ $cpu = 1 ]; then
  export CUDA_VISIBLE_DEVICES=""
  device=cpu budget_factor=3
else
  device=cuda budget_factor=1
fi
started=$(date +%s)
# On the CPU every budget is three times a GPU's, and so is the default deadline: there no device time is spent,
# and the GPU-sized steps of --quick take some 6 minutes on 2 cores.
deadline=${deadline:-$(( ($([ $quick = 1 ] && echo 360 || echo 580)) * budget_factor ))}
deadline_at=$((started + deadline))

# run_limited SECONDS COMMAND...: COMMAND under timeout; a function of this script runs in a bash of its own.
run_limited() {
  local secs=$1
  shift
  if declare -F "$1" > /dev/null; then
    timeout -k 5 "$secs" bash -c "$(declare -f); \"\$@\"" gpu_check "$@"
  else
    timeout -k 5 "$secs" "$@"
  fi
}
steps_json=""
failed=0
# step NAME BUDGET COMMAND...: runs COMMAND with its output in $logs/NAME.log, for at most BUDGET seconds (x3 on
# the CPU) and never past the deadline; records seconds, exit status (124: out of time) and budget.
step() {
  local name=$1 budget=$(($2 * budget_factor)) t0 rc seconds left
  shift 2
  if [[ "$skip_steps" == *",$name,"* ]]; then
    echo "gpu_check: $name skipped (--skip)"
    steps_json="$steps_json${steps_json:+,}\"$name\": {\"seconds\": 0, \"exit\": null, \"budget\": 0, \"skipped\": true}"
    return 0
  fi
  left=$((deadline_at - $(date +%s) - 5))
  [ "$budget" -gt "$left" ] && budget=$left
  if [ "$budget" -lt 5 ]; then
    failed=1
    echo "gpu_check: $name SKIPPED: the ${deadline} s deadline is reached"
    steps_json="$steps_json${steps_json:+,}\"$name\": {\"seconds\": 0, \"exit\": null, \"budget\": 0}"
    return 124
  fi
  t0=$(date +%s.%N)
  echo "gpu_check: $name (at most $budget s) ..."
  run_limited "$budget" "$@" > "$logs/$name.log" 2>&1
  rc=$?
  seconds=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  [ $rc = 124 ] || [ $rc = 137 ] && echo "gpu_check: $name ran out of its $budget s" >> "$logs/$name.log"
  [ $rc = 0 ] || { failed=1; echo "gpu_check: $name FAILED (exit $rc); the end of its log:"; tail -n 30 "$logs/$name.log"; }
  steps_json="$steps_json${steps_json:+,}\"$name\": {\"seconds\": $seconds, \"exit\": $rc, \"budget\": $budget}"
  echo "gpu_check: $name exit $rc, $seconds s"
  return $rc
}

# --- summary: written however the script ends (a failed step, a timeout's SIGTERM) ----------------------------
tests_line="" tests_runner="" skipped=0 torch_python="" torch_lib="" gpu="" binaries="none" binaries_reason=""
binaries_commit=""
json_or_null() { [ -s "$1" ] && cat "$1" || echo null; }
# Per step's log, how many owners of CUDA graphs fell back to eager decoding (StepGraphs' self-check warns once
# when a graph does not reproduce its eager step; the images are then the eager ones, only the speed is lost):
# {} when none did.
graph_fallbacks_json() {
  local out="" f n
  for f in "$logs"/*.log; do
    [ -f "$f" ] || continue
    n=$(grep -c "cuda_graphs: decoding eagerly from here on" "$f" || true)
    [ "${n:-0}" -gt 0 ] && out="$out${out:+, }\"$(basename "$f" .log)\": $n"
  done
  echo "{$out}"
}
write_summary() {
  {
    echo "{"
    echo "  \"mode\": \"$([ $cpu = 1 ] && echo cpu || echo cuda)\", \"quick\": $([ $quick = 1 ] && echo true || echo false),"
    echo "  \"torch_python\": $(json_str "$torch_python"), \"torch_lib\": $(json_str "$torch_lib"),"
    echo "  \"gpu\": $(json_str "$gpu"),"
    echo "  \"cores\": $jobs,"
    echo "  \"deps\": {$deps_json},"
    echo "  \"deps_lacking\": {$lacks_json},"
    echo "  \"libs\": $(json_or_null "$logs/libs.json"),"
    echo "  \"binaries\": \"$binaries\", \"binaries_reason\": $(json_str "$binaries_reason"), \"binaries_commit\": $(json_str "$binaries_commit"),"
    echo "  \"tests_runner\": $(json_str "$tests_runner"),"
    echo "  \"tests\": $(json_str "$tests_line"), \"tests_skipped\": $skipped,"
    echo "  \"steps\": {$steps_json},"
    echo "  \"demo_fp32\": $(json_or_null "$logs/demo-fp32/summary.json"),"
    echo "  \"demo_bf16\": $(json_or_null "$logs/demo-bf16/summary.json"),"
    echo "  \"demo_cpu\": $(json_or_null "$logs/demo-cpu/summary.json"),"
    echo "  \"step_cost\": $(json_or_null "$outdir/step-cost-$device.json"),"
    echo "  \"step_profile\": $(json_or_null "$outdir/step-profile-$device.json"),"
    echo "  \"break_even\": $(json_or_null "$logs/break-even/break-even.json"),"
    echo "  \"throughput\": $(json_or_null "$logs/throughput/throughput.json"),"
    echo "  \"bench\": {\"batch_1\": $(json_or_null "$logs/bench-b1/gpu-quick.json"), \"batch_8\": $(json_or_null "$logs/bench-b8/gpu-quick.json"), \"batch_32\": $(json_or_null "$logs/bench-b32/gpu-quick.json")},"
    echo "  \"graph_fallbacks\": $(graph_fallbacks_json),"
    echo "  \"memcheck\": $(json_str "$memcheck_status"),"
    echo "  \"deadline\": $deadline, \"seconds\": $(( $(date +%s) - started )), \"failed\": $failed"
    echo "}"
  } > "$outdir/summary.json"
  # Each figure beside its target ("figures" in the summary, figures.md): the standard library only.
  "${torch_python:-python3}" "$src/scripts/gpu_figures.py" "$outdir/summary.json" \
    --demo-metrics "fp32=$logs/demo-fp32/metrics.jsonl" --demo-metrics "bf16=$logs/demo-bf16/metrics.jsonl" \
    --demo-metrics "cpu=$logs/demo-cpu/metrics.jsonl" \
    || echo "gpu_check: scripts/gpu_figures.py failed: the summary has no figures"
  # The three benches' tables in one file (the device tool brings back at most eight).
  for b in 1 8 32; do
    [ -f "$logs/bench-b$b/gpu-quick.md" ] && { printf '\n# Batch %s\n\n' $b; cat "$logs/bench-b$b/gpu-quick.md"; }
  done > "$outdir/gpu-quick.md"
  [ -s "$outdir/gpu-quick.md" ] || rm -f "$outdir/gpu-quick.md"
  for f in "$logs"/*.log; do [ -f "$f" ] && { printf '\n===== %s =====\n' "$(basename "$f")"; cat "$f"; }; done > "$outdir/logs.txt"
  echo "gpu_check: binaries $binaries; ${tests_line:-tests did not run}; summary in $outdir/summary.json"
  rm -rf "$logs"
}
trap write_summary EXIT
trap 'failed=1; exit 143' TERM  # a timeout's SIGTERM still writes the summary, marked failed

echo "gpu_check: deps {$deps_json}"

# --- The Python whose torch the binaries run (and a build builds) against; the one the script tests use --------
torch_python=${VISPEC_PYTHON:-}
if [ -z "$torch_python" ]; then
  for p in "$src/.venv/bin/python3" python3; do
    if "$p" -c "import torch" 2> /dev/null; then torch_python=$(command -v "$p"); break; fi
  done
fi
[ -n "$torch_python" ] || { echo "gpu_check: no python3 with torch (run scripts/setup.sh, or set VISPEC_PYTHON)" >&2; exit 2; }
torch_lib=$("$torch_python" -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')
# The CUDA libraries of torch's wheel (nvidia/*/lib beside torch): used where a binary names one of them.
torch_dirs=$torch_lib
for d in "$torch_lib"/../../nvidia/*/lib; do
  [ -d "$d" ] && torch_dirs="$torch_dirs:$(cd "$d" && pwd)"
done
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2> /dev/null | head -1)
test_python=""
for p in python3 /usr/bin/python3 "$torch_python"; do
  if "$p" -c "import h5py, numpy" 2> /dev/null; then test_python=$(command -v "$p"); break; fi
done
[ -n "$test_python" ] || echo "gpu_check: no python3 with h5py and numpy: the script tests of a build would fail"

# --- libs: what the loader of this machine finds, and where the rest comes from --------------------------------
machine_sonames > "$logs/machine-sonames"
: > "$logs/forced" && : > "$logs/index"
# use_libs STEP FILE...: decides the libraries of FILE... and of the prefix dependencies' own files (mpirun,
# OpenMPI's plugins, which are dlopened and named by no binary; the libraries a build links), and puts the
# directories that provide them on LD_LIBRARY_PATH: torch's first, the private one ($logs/lib), then whatever the
# machine had there.
use_libs() {
  local name=$1 files=() dep rc dirs
  shift
  files=("$@")
  for dep in "${prefix_deps[@]}"; do
    if [ $prefix_ready = 0 ] || [ ! -d "$prefix/$dep" ]; then continue; fi
    mapfile -t -O "${#files[@]}" files < <(find "$prefix/$dep" -type f \( -name '*.so*' -o -path '*/bin/*' \) -size +1k)
  done
  step "$name" 30 resolve_libs "$logs/lib" "$logs/libs.json" "$logs/machine-sonames" "$logs/index" "$torch_dirs" \
    "$logs/forced" "${files[@]}"
  rc=$?
  dirs=$(printf '%s\n' "$torch_lib" "$(cat "$logs/libs.json.dirs" 2> /dev/null)" "$logs/lib" | awk 'NF && !seen[$0]++' | paste -sd:)
  export LD_LIBRARY_PATH="$dirs${base_ld_library_path:+:$base_ld_library_path}"
  # The prefix's libmpi (the machine has another MPI, or none) loads its plugins from the relocated prefix.
  if [ -z "${OPAL_PREFIX:-}" ] && find "$logs/lib" -lname "$prefix/mpi/*" | grep -q .; then
    export OPAL_PREFIX=$prefix/mpi/usr
  fi
  return $rc
}

# --- binaries: prebuilt (--binaries), carried, else built here --------------------------------------------------
vispec="" tests_bin="" tests_build_dir=""
start_check() {
  "$1" decoders > /dev/null || { echo "$1 decoders does not start (exit $?)"; return 1; }
  "$2" --gtest_list_tests > /dev/null || { echo "$2 --gtest_list_tests does not start (exit $?)"; return 1; }
  echo "both start"
}
# The carried vispec_tests names the paths of the machine that built it (source directory, vispec, torch's
# Python): where they do not exist here, links make them.
link_built_in() {
  local env=$carry/bin/built-in.env source_dir binary python
  [ -f "$env" ] || return 0
  source_dir=$(sed -n 's/^source_dir=//p' "$env") binary=$(sed -n 's/^binary=//p' "$env")
  python=$(sed -n 's/^torch_python=//p' "$env") binaries_commit=$(sed -n 's/^commit=//p' "$env")
  if [ -n "$source_dir" ] && [ ! -e "$source_dir" ]; then
    mkdir -p "$(dirname "$source_dir")" && ln -s "$src" "$source_dir" && echo "gpu_check: linked $source_dir -> $src"
  elif [ -n "$source_dir" ] && [ "$(cd "$source_dir" && pwd -P)" != "$(pwd -P)" ]; then
    echo "gpu_check: WARNING: vispec_tests reads the sources at $source_dir, another directory than $src"
  fi
  if [ -n "$binary" ] && [ ! -e "$binary" ]; then
    mkdir -p "$(dirname "$binary")" && ln -s "$vispec" "$binary" && echo "gpu_check: linked $binary -> $vispec"
  fi
  if [ -n "$python" ] && [ ! -e "$python" ]; then
    mkdir -p "$(dirname "$python")" && ln -s "$torch_python" "$python" && echo "gpu_check: linked $python -> $torch_python"
  fi
}
if [ -n "$binaries_dir" ]; then
  vispec=$binaries_dir/vispec binaries=prebuilt
  for t in "$binaries_dir/tests/vispec_tests" "$binaries_dir/vispec_tests"; do [ -x "$t" ] && { tests_bin=$t; break; }; done
  [ -f "$binaries_dir/CTestTestfile.cmake" ] && tests_build_dir=$binaries_dir
elif [ -f "$carry/bin/vispec.xz" ] && [ -f "$carry/bin/vispec_tests.xz" ]; then
  # They travel compressed (the device tool moves 64 MiB in all); unpacked outside the carried folder, which
  # must not grow by them where it is carried again.
  bin=${prefix}-bin
  mkdir -p "$bin"
  for b in vispec vispec_tests; do
    xz -dc "$carry/bin/$b.xz" > "$bin/$b" 2> /dev/null \
      || "$torch_python" -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' \
           "$carry/bin/$b.xz" "$bin/$b"
    chmod +x "$bin/$b"
  done
  vispec=$bin/vispec tests_bin=$bin/vispec_tests binaries=carried
  link_built_in
else
  binaries_reason="no carried binaries ($carry/bin: run scripts/gpu_carry.sh after a Release build)"
fi
# --- prefix: the carried packages, where the machine lacks a dependency or a library -------------------------
base_ld_library_path=${LD_LIBRARY_PATH:-}
prefix_ready=0
# The prefix is unpacked (seconds) where a dependency is decided "prefix", or where the binaries need a library
# that neither torch nor the machine has (a machine with spdlog 1.12 lacks libspdlog.so.1.10).
need_prefix=0
if [ ${#prefix_deps[@]} -gt 0 ]; then
  need_prefix=1
elif [ -d "$carry/debs" ] && [ -n "$vispec" ] && [ -n "$tests_bin" ]; then
  resolve_libs "$logs/precheck" "$logs/precheck.json" "$logs/machine-sonames" "$logs/index" "$torch_dirs" \
    "$logs/forced" "$vispec" "$tests_bin" > /dev/null
  grep -q '"missing"' "$logs/precheck.json" && need_prefix=1
fi
if [ $need_prefix = 1 ]; then
  if step prefix 30 unpack_carry "$carry" "$prefix"; then
    prefix_ready=1
    cp "$prefix/index" "$logs/index"
  elif [ ${#prefix_deps[@]} -gt 0 ]; then
    echo "gpu_check: no prefix for ${prefix_deps[*]}: a build would fail, and so may the MPI tests"
  fi
fi
if [ $prefix_ready = 1 ]; then
  if [ "${dep_from[mpi]}" = prefix ]; then
    # OpenMPI's launcher, library and plugins must be one build: the prefix's, all of them.
    grep " $prefix/mpi/" "$logs/index" | awk '{ print $1 }' > "$logs/forced"
    export PATH=$prefix/mpi/usr/bin:$PATH
    export OPAL_PREFIX=$prefix/mpi/usr  # OpenMPI finds its plugins and help files under the relocated prefix
  fi
  [ "${dep_from[fashion-mnist]}" = prefix ] && export VISPEC_FASHION_MNIST_DIR=$carry/fashion-mnist
fi
# One machine, no ssh: OpenMPI's launcher for a single node, else it refuses to start without an rsh agent.
command -v ssh > /dev/null || command -v rsh > /dev/null || export OMPI_MCA_plm=isolated

# --- the binaries start, else a build ---------------------------------------------------------------------------
if [ -n "$vispec" ]; then
  if [ ! -x "$vispec" ] || [ -z "$tests_bin" ]; then
    binaries_reason="no vispec or vispec_tests in ${binaries_dir:-$carry/bin}" && vispec=""
  else
    use_libs libs "$vispec" "$tests_bin"
    failed_before=$failed
    if step binaries 60 start_check "$vispec" "$tests_bin"; then
      binaries_reason="they start with this machine's torch ($torch_lib)"
    else
      binaries_reason="they do not start: $(grep -v '^gpu_check:' "$logs/binaries.log" | grep -m1 -E 'error|not found|cannot' || tail -n 1 "$logs/binaries.log")"
      vispec=""
      failed=$failed_before  # the build below stands in for them (its steps say whether it did)
    fi
  fi
  if [ -z "$vispec" ] && [ -n "$binaries_dir" ]; then
    binaries=none
    echo "gpu_check: --binaries $binaries_dir: $binaries_reason" >&2
    exit 1  # --binaries promises no build (the CTest case on 2 cores)
  fi
fi
if [ -z "$vispec" ]; then
  # A build with each dependency from where it was decided to come from: the prefix's through one root each.
  binaries=built
  cmake_extra=()
  roots=""
  for dep in "${prefix_deps[@]}"; do
    [ -d "$prefix/$dep/usr" ] && roots="$roots${roots:+;}$prefix/$dep/usr"
  done
  [ -n "$roots" ] && cmake_extra+=(-DCMAKE_PREFIX_PATH="$roots")
  # HDF5 from the prefix's files, not from an h5cc (the machine's, or the prefix's script that names /usr).
  [ "${dep_from[hdf5]}" = prefix ] && cmake_extra+=(-DHDF5_C_COMPILER_EXECUTABLE=/nonexistent/h5cc)
  [ $prefix_ready = 1 ] && use_libs libs_for_build  # the prefix's libraries that the linker follows
  [ -n "$test_python" ] && cmake_extra+=(-DVISPEC_TEST_PYTHON="$test_python")
  step configure 120 cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release -DVISPEC_PYTHON="$torch_python" \
    "${cmake_extra[@]}" || exit 1
  step build 480 cmake --build "$build" -j"$jobs" || exit 1
  vispec=$build/vispec tests_bin=$build/tests/vispec_tests tests_build_dir=$build
  binaries_commit=$(git -C "$src" rev-parse --short HEAD 2> /dev/null)
  use_libs libs_built "$vispec" "$tests_bin"
fi
echo "gpu_check: binaries $binaries: $binaries_reason"

# --- the figures, then the tests ------------------------------------------------------------------------------
work=$logs/work  # the tests' working directory (ctest's would be build/tests)
mkdir -p "$work"
gtest_summary() {  # the gtest summary lines of log $1, on one line
  grep -E '^\[==========\] [0-9]+ tests? from .* ran|^\[  (PASSED  |SKIPPED |FAILED  )\] [0-9]+ tests?' "$1" | paste -sd';' | sed 's/;/; /g'
}
run_in() { cd "$1" && shift && "$@"; }
demos() {
  step demo_fp32 30 "$vispec" run jobs/demo.yaml --out "$logs/demo-fp32" --new --set device=$device "${demo_sets[@]}"
  step demo_bf16 30 "$vispec" run jobs/demo.yaml --out "$logs/demo-bf16" --new --set device=$device \
    --set model.dtype=bf16 "${demo_sets[@]}"
  # The same demo on 2 CPU threads of this machine: the figure the GPU's demo is measured against.
  step demo_cpu 30 "$vispec" run jobs/demo.yaml --out "$logs/demo-cpu" --new --set device=cpu --set threads=2 \
    "${demo_sets[@]}"
}
# memcheck: compute-sanitizer's memcheck over the kernel tests (every CUDA kernel of kernels/ beside its CPU
# reference, the kernel check's small inputs included): an out-of-bounds, misaligned or uninitialised-pointer
# access in any kernel, ours or LibTorch's, fails the step (exit 86). Last of the quick steps, so that it never
# costs a figure its time. It does not run, and does not fail the run, without a GPU (--cpu), without
# compute-sanitizer, with under 30 s to the deadline, or where the sanitizer refuses the device (a gVisor
# machine: "Device not supported"); "memcheck" in the summary says which, or "clean", or "errors".
memcheck_status=""
kernel_tests='Devices.FusedCudaKernelsEqualTheirCpuReference:Devices.*OnCuda*:TreeWalk.OnCuda*:TreeLayout.OnCuda*'
sanitize_kernels() {  # sanitizer, tests binary, filter
  local out rc
  out=$(mktemp)
  "$1" --tool memcheck --error-exitcode 86 --print-limit 20 "$2" --gtest_filter="$3" 2>&1 | tee "$out"
  rc=${PIPESTATUS[0]}
  if [ "$rc" != 0 ] && [ "$rc" != 86 ] && grep -q "Device not supported" "$out"; then
    echo "gpu_check: memcheck: compute-sanitizer refused this device"
    rc=0
  fi
  rm -f "$out"
  return "$rc"
}
memcheck() {
  local sanitizer left
  sanitizer=$(command -v compute-sanitizer || true)
  [ -z "$sanitizer" ] && [ -x "${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer" ] &&
    sanitizer="${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer"
  left=$((deadline_at - $(date +%s) - 5))
  if [[ "$skip_steps" == *",memcheck,"* ]]; then
    memcheck_status="not run: --skip"
    step memcheck 90 true  # recorded as skipped
    return 0
  fi
  if [ $cpu = 1 ]; then memcheck_status="not run: no GPU (--cpu)"
  elif [ -z "$sanitizer" ]; then memcheck_status="not run: no compute-sanitizer on this machine"
  elif [ "$left" -lt 30 ]; then memcheck_status="not run: $left s to the deadline"
  else
    step memcheck 90 run_in "$work" sanitize_kernels "$sanitizer" "$tests_bin" "$kernel_tests"
    local rc=$?
    if grep -q "compute-sanitizer refused this device" "$logs/memcheck.log"; then
      memcheck_status="not run: compute-sanitizer refused this device"
    elif [ $rc = 0 ]; then memcheck_status="clean: $(grep -m1 'ERROR SUMMARY' "$logs/memcheck.log")"
    elif [ $rc = 86 ]; then memcheck_status="errors: $(grep -m1 'ERROR SUMMARY' "$logs/memcheck.log")"
    else memcheck_status="failed (exit $rc)"
    fi
    return 0
  fi
  echo "gpu_check: memcheck $memcheck_status"
  steps_json="$steps_json${steps_json:+,}\"memcheck\": {\"seconds\": 0, \"exit\": null, \"budget\": 0, \"skipped\": true}"
}
# --also: one-off experiments after the other steps, steps also_1, also_2, ...
also() {
  local i=0 command
  for command in "${also_commands[@]}"; do
    i=$((i + 1))
    step "also_$i" 90 env VISPEC="$vispec" VISPEC_TESTS="$tests_bin" VISPEC_DEVICE="$device" bash -c "$command"
  done
}
if [ $quick = 1 ]; then
  tests_runner="vispec_tests --gtest_filter (the CUDA cases and PhaseClock)"
  filter='Devices.*Cuda*:Devices.*Gpu*:*Cuda*:*CudaGraph*:PhaseClock.*'
  # 66 s of 90 on an H100 at aecefab; the whole-iteration graphs of the speculative decoders' test capture more
  # since, hence 120 (the deadline clips every budget).
  step cuda_tests 120 run_in "$work" "$tests_bin" --gtest_filter="$filter"
  [ -f "$logs/cuda_tests.log" ] && tests_line=$(gtest_summary "$logs/cuda_tests.log") &&
    skipped=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) tests\{0,1\}.*/\1/p' "$logs/cuda_tests.log" | head -1)
  skipped=${skipped:-0}
  [ $step_cost_args_set = 1 ] || step_cost_args="--dtypes fp32,bf16 --batches 1,8,32 --modes eager,graphs --max-steps 64"
  # On a CPU: GPT-XL's shape cut to 1 layer on a 4x4 grid, 8 steps (4 layers at batch 32 took most of the budget).
  [ $step_cost_args_set = 1 ] || [ $cpu = 0 ] ||
    step_cost_args="--dtypes fp32,bf16 --batches 1,32 --modes graphs --xl-layers 1 --xl-grid 4 --max-steps 8"
  # shellcheck disable=SC2086  # step_cost_args is a list of options
  step step_cost 60 "$vispec" step-cost --device $device --results "$outdir" $step_cost_args
  # Every decoder's iteration against AR's step on GPT-XL's shape: the break-even table (bench/break_even.h), in
  # the summary and figures.md (the device tool brings back eight files: its own .json and .md stay in the logs).
  # shellcheck disable=SC2086  # break_even_args is a list of options
  step break_even 150 "$vispec" step-cost --device $device --results "$logs/break-even" --name break-even \
    --decoders all $break_even_args
  # Images per second at batches up to what the GPU holds: AR against its floor, the lossless chain and tree
  # decoders and SSD projected (bench/break_even.h), in the summary and figures.md.
  # shellcheck disable=SC2086  # throughput_args is a list of options
  step throughput 120 "$vispec" step-cost --device $device --results "$logs/throughput" --name throughput \
    --decoders sd,sjd,ssd,eagle2 $throughput_args
  # Where a replayed bf16 step's device time goes, kernel by kernel (bench/kernel_profile.h).
  step step_profile 45 "$vispec" step-cost --device $device --results "$outdir" --name "step-profile-$device" \
    --dtypes bf16 --batches "$([ $cpu = 1 ] && echo 1 || echo 1,32)" --modes eager,graphs --max-steps 32 --profile-steps 16
  # Every decoder at batch 1, 8 and 32. At 32 on a GPU, four images per prompt: 40 images, in batches of 32 and 8
  # (with --cpu the bench's 10: nine decoders decoding 40 images each on the CPU outlast the step's budget).
  for b in 1 8 32; do
    more=()
    [ $b = 32 ] && [ $cpu = 0 ] && more=(--set images_per_prompt=4)
    step bench_b$b 50 "$vispec" bench bench/gpu-quick.yaml --results "$logs/bench-b$b" --set batch_size=$b \
      "${more[@]}" --set device=$device "${bench_sets[@]}"
  done
  demos
  memcheck
  also
else
  demos
  # shellcheck disable=SC2086  # step_cost_args is a list of options
  step step_cost 240 "$vispec" step-cost --device $device --results "$outdir" $step_cost_args
  if [ -n "$tests_build_dir" ]; then
    tests_runner="ctest in $tests_build_dir"
    ctest_args=(--test-dir "$tests_build_dir" --output-on-failure -j"$jobs" -E 'gpu_check_cpu')
    [ -n "$tests_regex" ] && ctest_args+=(-R "$tests_regex")
    step tests 600 ctest "${ctest_args[@]}"
    tests_line=$(grep -E "tests passed|tests failed" "$logs/tests.log" | tail -1)
    skipped=$(grep -c "Skipped" "$logs/tests.log")
  else
    # No build directory travels with the carried binaries, so no ctest: the gtest cases alone (the script
    # tests, e2e_demo_run, mpi_*, ..., need one).
    tests_runner="vispec_tests run directly (carried binaries, no build directory for ctest: the script tests did not run)"
    filter='*'
    if [ -n "$tests_regex" ]; then
      filter=$("$tests_bin" --gtest_list_tests | awk '/^[^ ]/ { suite = $1 } /^  / { print suite $1 }' \
               | grep -E "$tests_regex" | paste -sd:)
    fi
    step tests 600 run_in "$work" "$tests_bin" --gtest_filter="${filter:-NONE}"
    tests_line=$(gtest_summary "$logs/tests.log")
    skipped=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) tests\{0,1\}.*/\1/p' "$logs/tests.log" | head -1)
    skipped=${skipped:-0}
  fi
  also
fi

exit $failed
