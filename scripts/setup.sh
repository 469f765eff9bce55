#!/usr/bin/env bash
# Installs exactly the Debian packages vispec needs to build, test and run. Idempotent; apt-get only.
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  libtorch-dev              # LibTorch 1.13 (CPU)
  libopenblas0-pthread      # without it LibTorch falls back to reference BLAS (6 vs 94 GFLOP/s measured here)
  libopenmpi-dev openmpi-bin
  libhdf5-dev
  libspdlog-dev libfmt-dev
  libgtest-dev
  nlohmann-json3-dev
  libyaml-cpp-dev
  libcli11-dev
  libpng-dev
  dataset-fashion-mnist     # real training data (IDX files)
  python3-h5py python3-numpy  # tests read our outputs back with another tool
  gnuplot-nox               # vispec bench draws its speed/quality plot with gnuplot
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "setup: installed ${missing[*]}"
