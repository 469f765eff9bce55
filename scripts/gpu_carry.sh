#!/usr/bin/env bash
# Fills .gpu-carry/ (ignored by git) with what scripts/gpu_check.sh needs on the GPU machine, which has
# python3 with torch, nvcc and CMake but no MPI, HDF5, spdlog, yaml-cpp or GoogleTest, and reaches no package
# registry. Run it here (after scripts/setup.sh, which leaves apt's package lists in place), then carry the
# folder with the working tree: the device tool's `carry: [".gpu-carry"]`.
#   .gpu-carry/debs/           Debian packages, unpacked there with dpkg -x into a private prefix
#   .gpu-carry/debs/fallback/  libraries of those packages' own dependencies, used there only where the
#                              machine has no library of that name (libcurl's chain for HDF5's, ...)
#   .gpu-carry/fashion-mnist/  the test split of Debian's dataset-fashion-mnist (the quality tests read it;
#                              the whole package is 31 MB)
# About 20 MB in all; the working tree plus carried files must stay under 64 MiB.
set -euo pipefail
cd "$(dirname "$0")/.."
out=.gpu-carry
rm -rf "$out"
mkdir -p "$out/debs/fallback" "$out/fashion-mnist"

# What the build links and the tests run: the -dev packages, their libraries, and OpenMPI's launcher with the
# libraries its plugins load.
packages=(
  libopenmpi-dev libopenmpi3 openmpi-bin openmpi-common libpmix2 libhwloc15 libevent-core-2.1-7
  libevent-pthreads-2.1-7 libfabric1 libucx0 libibverbs1 librdmacm1 libnl-3-200 libnl-route-3-200 libpsm2-2
  libpsm-infinipath1 libmunge2 libnuma1 libltdl7
  libhdf5-dev libhdf5-103-1 libsz2 libaec0
  libspdlog-dev libspdlog1.10 libfmt-dev libfmt9
  libyaml-cpp-dev libyaml-cpp0.7
  libgtest-dev nlohmann-json3-dev libcli11-dev
  libpng-dev libpng16-16 zlib1g-dev
  libsentencepiece-dev libsentencepiece0
  libpcre2-dev libpcre2-8-0 libutf8proc-dev libutf8proc2
)
# Libraries that a machine of another distribution usually has under the same name (then its own are used).
fallback=(
  libcurl4 libbrotli1 libgssapi-krb5-2 libidn2-0 libkrb5-3 libk5crypto3 libkrb5support0 libkeyutils1 libcom-err2
  libldap-2.5-0 libsasl2-2 libsasl2-modules-db libnghttp2-14 libpsl5 librtmp1 libgnutls30 libhogweed6 libnettle8
  libgmp10 libunistring2 libtasn1-6 libp11-kit0 libffi8 libssh2-1 libzstd1 libssl3 libdb5.3
)
# apt-get download writes into the working directory; as root it warns that the _apt user cannot write there.
(cd "$out/debs" && apt-get download -qq "${packages[@]}" 2>&1 | grep -v "unsandboxed" || true)
(cd "$out/debs/fallback" && apt-get download -qq "${fallback[@]}" 2>&1 | grep -v "unsandboxed" || true)
for p in "${packages[@]}"; do ls "$out/debs/${p}_"*.deb > /dev/null; done  # every package arrived
for p in "${fallback[@]}"; do ls "$out/debs/fallback/${p}_"*.deb > /dev/null; done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && apt-get download -qq dataset-fashion-mnist 2>&1 | grep -v "unsandboxed" || true)
dpkg -x "$tmp"/dataset-fashion-mnist_*.deb "$tmp/x"
cp "$tmp"/x/usr/share/datasets/fashion-mnist/t10k-* "$out/fashion-mnist/"
echo "gpu_carry: $(du -sh "$out" | cut -f1) in $out ($(ls "$out/debs"/*.deb | wc -l) packages, $(ls "$out/debs/fallback" | wc -l) fallback)"
