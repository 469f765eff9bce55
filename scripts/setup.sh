#!/usr/bin/env bash
# Installs everything vispec needs to build, test and run, on a fresh Debian 12 machine. Idempotent.
#   1. Debian packages (apt-get): compilers, MPI, HDF5, the C++ libraries, the test tools.
#   2. The project's virtual environment .venv (ignored by git) with the pinned packages of
#      scripts/requirements.txt from PyPI: torch's wheel carries the CUDA-enabled LibTorch that CMake builds
#      against (CMakeLists.txt asks .venv/bin/python3 for torch.utils.cmake_prefix_path).
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake pkg-config
  python3 python3-venv      # the virtual environment (python3 -m venv) that holds torch
  libopenmpi-dev openmpi-bin
  libhdf5-dev
  libspdlog-dev libfmt-dev
  libgtest-dev
  nlohmann-json3-dev
  libyaml-cpp-dev
  libcli11-dev
  libpng-dev
  libjpeg62-turbo-dev       # training images: ImageNet's folders are JPEG files
  libsentencepiece-dev      # T5's tokenizer: captions for text-to-image models
  libpcre2-dev libutf8proc-dev  # the LLM families' BPE tokenizers: Unicode regular expressions, NFC
  dataset-fashion-mnist     # real training data (IDX files)
  python3-h5py python3-numpy  # tests read our outputs back with another tool (Debian's /usr/bin/python3)
  gnuplot-nox               # vispec bench draws its speed/quality plot with gnuplot
  clang libclang-rt-14-dev  # the fuzz targets (fuzz/): libFuzzer and the sanitizers
  clang-format              # tests/format_check.sh: the house style (.clang-format)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} Debian packages present"
else
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
  echo "setup: installed ${missing[*]}"
fi

# The virtual environment: made once, then only checked against the pins (a changed pin reinstalls).
requirements=scripts/requirements.txt
stamp=.venv/requirements.installed
if [ -f "$stamp" ] && cmp -s "$requirements" "$stamp"; then
  echo "setup: .venv matches $requirements"
else
  # torch's wheels unpack to about 5 GB in .venv, and pip stages them in TMPDIR first: a full disk would
  # otherwise surface as pip's bare "[Errno 28]" halfway through.
  need_kb=$((8 * 1024 * 1024))
  for dir in . "${TMPDIR:-/tmp}"; do
    free_kb=$(df -Pk "$dir" | awk 'NR == 2 { print $4 }')
    if [ "$free_kb" -lt "$need_kb" ]; then
      echo "setup: error: $(cd "$dir" && pwd) has $((free_kb / 1024)) MiB free; installing .venv needs 8 GiB" >&2
      exit 1
    fi
  done
  [ -x .venv/bin/python3 ] || python3 -m venv .venv
  .venv/bin/python3 -m pip install -q --disable-pip-version-check --no-cache-dir -r "$requirements"
  cp "$requirements" "$stamp"
  echo "setup: .venv has $(.venv/bin/python3 -c 'import torch; print("torch", torch.__version__)')"
fi
