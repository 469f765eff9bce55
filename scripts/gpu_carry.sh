#!/usr/bin/env bash
# Fills .gpu-carry/ (ignored by git) with what scripts/gpu_check.sh needs on the GPU machine, which has python3
# with torch, nvcc and CMake, some of the Debian libraries (which ones changes from machine to machine), and
# reaches no package registry. Run it here, after a Release build (scripts/setup.sh, then cmake --build build),
# then carry the folder with the working tree: the device tool's `carry: [".gpu-carry"]`.
#
#   bash scripts/gpu_carry.sh [--build-dir DIR] [--no-binaries]
#
#   .gpu-carry/bin/            the Release binaries built here (vispec.xz, vispec_tests.xz: stripped and
#                              compressed, 9 MB become 3), and built-in.env: the paths compiled into them and the
#                              commit they were built from. gpu_check.sh runs them against the GPU machine's own
#                              torch, and builds there only when they do not start (a build costs about 3 of its
#                              10 minutes)
#   .gpu-carry/debs/DEP/       the Debian packages of one dependency (mpi, hdf5, pcre2, ...: gpu_check.sh's
#                              names), unpacked there with dpkg -x. gpu_check.sh decides per dependency whether
#                              the machine has it; per shared library, whether the machine's loader finds it
#   .gpu-carry/debs/fallback/  libraries of those packages' own dependencies (libcurl's chain for HDF5's, ...),
#                              used there only for the sonames the machine's loader does not find
#   .gpu-carry/fashion-mnist/  the test split of Debian's dataset-fashion-mnist (the quality judge and tests read
#                              it; the whole package is 31 MB)
# The device tool moves at most 64 MiB (working tree plus carried paths): this script prints the total and fails
# above 60 MiB, so that a run never fails at the transfer.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$(pwd)
build=$src/build binaries=1
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) build=$(cd "$2" && pwd); shift ;;
    --no-binaries) binaries=0 ;;
    -h|--help) awk 'NR > 1 { if (!/^#/) exit; print }' "$0"; exit 0 ;;
    *) echo "gpu_carry: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
out=.gpu-carry
limit_mib=60

# Checked before anything is deleted: a missing build must not cost the carry that is already there.
if [ $binaries = 1 ]; then
  tests_bin=$build/tests/vispec_tests  # tests/CMakeLists.txt's add_executable(vispec_tests) in build/tests
  for b in "$build/vispec" "$tests_bin"; do
    [ -x "$b" ] || { echo "gpu_carry: no $b: build first (cmake --build build), or pass --no-binaries" >&2; exit 1; }
  done
  build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build/CMakeCache.txt")
  [ "$build_type" = Release ] || { echo "gpu_carry: $build is a '$build_type' build, not Release" >&2; exit 1; }
fi

rm -rf "$out"
mkdir -p "$out/debs/fallback" "$out/fashion-mnist"

# What the build links and the binaries and tests run, by dependency (the names gpu_check.sh decides on): the
# -dev packages, their libraries, and OpenMPI's launcher with the libraries its plugins load.
declare -A packages=(
  [mpi]="libopenmpi-dev libopenmpi3 openmpi-bin openmpi-common libpmix2 libhwloc15 libevent-core-2.1-7
         libevent-pthreads-2.1-7 libfabric1 libucx0 libibverbs1 librdmacm1 libnl-3-200 libnl-route-3-200
         libpsm2-2 libpsm-infinipath1 libmunge2 libnuma1 libltdl7"
  [hdf5]="libhdf5-dev libhdf5-103-1 libsz2 libaec0"
  [spdlog]="libspdlog-dev libspdlog1.10"
  [fmt]="libfmt-dev libfmt9"
  [yaml-cpp]="libyaml-cpp-dev libyaml-cpp0.7"
  [nlohmann-json]="nlohmann-json3-dev"
  [cli11]="libcli11-dev"
  [gtest]="libgtest-dev"
  [png]="libpng-dev libpng16-16"
  [jpeg]="libjpeg62-turbo-dev libjpeg62-turbo"
  [zlib]="zlib1g-dev"
  [sentencepiece]="libsentencepiece-dev libsentencepiece0"
  [pcre2]="libpcre2-dev libpcre2-8-0"
  [utf8proc]="libutf8proc-dev libutf8proc2"
)
# Libraries that a machine of another distribution usually has under the same name (then its own are used).
fallback=(
  libcurl4 libbrotli1 libgssapi-krb5-2 libidn2-0 libkrb5-3 libk5crypto3 libkrb5support0 libkeyutils1 libcom-err2
  libldap-2.5-0 libsasl2-2 libsasl2-modules-db libnghttp2-14 libpsl5 librtmp1 libgnutls30 libhogweed6 libnettle8
  libgmp10 libunistring2 libtasn1-6 libp11-kit0 libffi8 libssh2-1 libzstd1 libssl3 libdb5.3
)
# apt-get download writes into the working directory; as root it warns that the _apt user cannot write there.
download() { (cd "$1" && shift && apt-get download -qq "$@" 2>&1 | grep -v "unsandboxed" || true); }
for dep in "${!packages[@]}"; do
  mkdir -p "$out/debs/$dep"
  # shellcheck disable=SC2086  # a list of package names
  download "$out/debs/$dep" ${packages[$dep]}
  for p in ${packages[$dep]}; do ls "$out/debs/$dep/${p}_"*.deb > /dev/null; done  # every package arrived
done
download "$out/debs/fallback" "${fallback[@]}"
for p in "${fallback[@]}"; do ls "$out/debs/fallback/${p}_"*.deb > /dev/null; done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
download "$tmp" dataset-fashion-mnist
dpkg -x "$tmp"/dataset-fashion-mnist_*.deb "$tmp/x"
cp "$tmp"/x/usr/share/datasets/fashion-mnist/t10k-* "$out/fashion-mnist/"

# The binaries, stripped (the symbol tables are most of their size; the dynamic symbols stay), checked to still
# start here, and compressed. built-in.env: the source directory, vispec binary and torch Python compiled into
# vispec_tests (VISPEC_SOURCE_DIR, VISPEC_BINARY, VISPEC_TORCH_PYTHON), which gpu_check.sh links to their
# counterparts on a machine where they do not exist.
if [ $binaries = 1 ]; then
  mkdir -p "$out/bin"
  strip -o "$out/bin/vispec" "$build/vispec"
  strip -o "$out/bin/vispec_tests" "$tests_bin"
  "$out/bin/vispec" decoders > /dev/null || { echo "gpu_carry: the stripped vispec does not start" >&2; exit 1; }
  "$out/bin/vispec_tests" --gtest_list_tests > /dev/null \
    || { echo "gpu_carry: the stripped vispec_tests does not start" >&2; exit 1; }
  xz -9 "$out/bin/vispec" "$out/bin/vispec_tests"
  source_dir=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build/CMakeCache.txt")
  torch_python=$(sed -n 's/^VISPEC_PYTHON:[A-Z]*=//p' "$build/CMakeCache.txt")
  commit=$(git rev-parse --short HEAD 2> /dev/null || echo unknown)
  # Sources changed since the commit: the binaries may hold them or not (they are as old as the last build).
  git diff --quiet HEAD 2> /dev/null || commit="$commit+changes"
  {
    echo "source_dir=$source_dir"
    echo "binary=$build/vispec"
    echo "torch_python=$torch_python"
    echo "commit=$commit"
    echo "built=$(date -u -r "$build/vispec" +%Y-%m-%dT%H:%M:%SZ)"
  } > "$out/bin/built-in.env"
fi

# What the device tool moves: tracked and untracked-not-ignored files, shared/ where the checkout has one, and
# the carried folder.
tree_bytes=$(git ls-files -z --cached --others --exclude-standard | du -cb --files0-from=- 2> /dev/null | tail -1 | cut -f1)
shared_bytes=0
[ -d shared ] && shared_bytes=$(du -sb shared | cut -f1)
carry_bytes=$(du -sb "$out" | cut -f1)
mib() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }
total=$((tree_bytes + shared_bytes + carry_bytes))
echo "gpu_carry: $(mib "$carry_bytes") MiB in $out ($(find "$out/debs" -mindepth 2 -name '*.deb' -not -path '*/fallback/*' | wc -l) packages, $(ls "$out/debs/fallback" | wc -l) fallback, binaries: $([ $binaries = 1 ] && du -ch "$out"/bin/*.xz | tail -1 | cut -f1 || echo none))"
echo "gpu_carry: working tree $(mib "$tree_bytes") MiB + shared $(mib "$shared_bytes") MiB + carry $(mib "$carry_bytes") MiB = $(mib "$total") MiB (limit $limit_mib MiB of the device tool's 64)"
if [ "$total" -gt $((limit_mib * 1048576)) ]; then
  echo "gpu_carry: FAIL: $(mib "$total") MiB would travel, over $limit_mib MiB: the device tool would refuse the run" >&2
  exit 1
fi
