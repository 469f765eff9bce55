#!/usr/bin/env bash
# scripts/gpu_check.sh --deps-only on fake machines: which dependencies it takes from the machine and which from
# the carried prefix, and, per shared library of a binary, whether the loader's own or a link to the prefix's.
# The GPU machines differ in what they lack (the last one had MPI, HDF5 and spdlog but no pcre2.h), and a wrong
# decision costs a run of scarce device time, so the decisions are tested here, in seconds, without a GPU:
#   1. a machine with every dependency but pcre2 and utf8proc: those two from the prefix, the rest its own
#   2. a machine with nothing: everything from the prefix
#   3. a machine without spdlog: spdlog and fmt (the prefix's spdlog is built on the prefix's fmt) from the prefix
#   4. libraries: a copy of grep, on a machine whose loader (a fake `ldconfig -p` list) lacks one of grep's
#      libraries, which a carried package (built here with dpkg-deb) has: that one library, and only it, is
#      linked into the private directory, and grep runs with it
#   bash tests/gpu_check_deps.sh SOURCE_DIR
set -euo pipefail
src=$1
py=${VISPEC_TEST_PYTHON:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
check=$src/scripts/gpu_check.sh
arch=x86_64-linux-gnu

# A machine laid out as Debian's packages lay it out: headers, link libraries, CMake packages, tools, data.
fake_machine() {  # fake_machine ROOT DEP...: ROOT with what those dependencies install
  local root=$1 dep f
  shift
  for dep in "$@"; do
    case $dep in
      mpi) f="usr/lib/$arch/openmpi/include/mpi.h usr/lib/$arch/openmpi/lib/libmpi.so usr/bin/mpirun" ;;
      hdf5) f="usr/include/hdf5/serial/hdf5.h usr/lib/$arch/hdf5/serial/libhdf5.so" ;;
      spdlog) f="usr/include/spdlog/spdlog.h usr/lib/$arch/libspdlog.so usr/lib/$arch/cmake/spdlog/spdlogConfig.cmake" ;;
      fmt) f="usr/include/fmt/format.h usr/lib/$arch/libfmt.so usr/lib/$arch/cmake/fmt/fmt-config.cmake" ;;
      yaml-cpp) f="usr/include/yaml-cpp/yaml.h usr/lib/$arch/libyaml-cpp.so usr/lib/$arch/cmake/yaml-cpp/yaml-cpp-config.cmake" ;;
      nlohmann-json) f="usr/include/nlohmann/json.hpp usr/share/cmake/nlohmann_json/nlohmann_jsonConfig.cmake" ;;
      cli11) f="usr/include/CLI/CLI.hpp" ;;
      gtest) f="usr/include/gtest/gtest.h usr/lib/$arch/libgtest.a" ;;
      png) f="usr/include/png.h usr/lib/$arch/libpng16.so" ;;
      jpeg) f="usr/include/jpeglib.h usr/lib/$arch/libjpeg.so" ;;
      zlib) f="usr/include/zlib.h usr/lib/$arch/libz.so" ;;
      sentencepiece) f="usr/include/sentencepiece_processor.h usr/lib/$arch/libsentencepiece.so" ;;
      pcre2) f="usr/include/pcre2.h usr/lib/$arch/libpcre2-8.so" ;;
      utf8proc) f="usr/include/utf8proc.h usr/lib/$arch/libutf8proc.so" ;;
      fashion-mnist) f="usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz" ;;
      *) echo "fake_machine: unknown $dep" >&2; return 1 ;;
    esac
    for p in $f; do mkdir -p "$root/$(dirname "$p")" && touch "$root/$p"; done
  done
  chmod +x "$root/usr/bin/"* 2> /dev/null || true
}
all=(mpi hdf5 spdlog fmt yaml-cpp nlohmann-json cli11 gtest png jpeg zlib sentencepiece pcre2 utf8proc fashion-mnist)
deps_only() {  # deps_only NAME SYSROOT [--binaries DIR]: the JSON in $work/NAME.json
  local name=$1 root=$2
  shift 2
  VISPEC_GPU_CHECK_SYSROOT=$root VISPEC_PYTHON=false bash "$check" --deps-only "$@" > "$work/$name.json" \
    || { echo "FAIL: gpu_check.sh --deps-only ($name)"; cat "$work/$name.json"; exit 1; }
}

fake_machine "$work/no-pcre2" mpi hdf5 spdlog fmt yaml-cpp nlohmann-json cli11 gtest png jpeg zlib sentencepiece fashion-mnist
deps_only no-pcre2 "$work/no-pcre2"
mkdir -p "$work/nothing"
deps_only nothing "$work/nothing"
fake_machine "$work/no-spdlog" "${all[@]}" && rm -r "$work/no-spdlog/usr/include/spdlog"
deps_only no-spdlog "$work/no-spdlog"

# 4. grep's first library other than libc (libpcre2-8 on Debian 12) is the one the machine lacks.
mkdir -p "$work/bin"
cp "$(command -v grep)" "$work/bin/vispec"
lib=$(readelf -d "$work/bin/vispec" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p' | grep -v '^libc\.so' | head -1)
{ ldconfig -p 2> /dev/null || /sbin/ldconfig -p; } > "$work/ldconfig.machine"
lib_path=$(awk -v s="$lib" '$1 == s && /x86-64/ { print $NF; exit }' "$work/ldconfig.machine")
if [ -z "$lib" ] || [ ! -f "$lib_path" ]; then echo "FAIL: no library of grep to take away ($lib, $lib_path)"; exit 1; fi
awk -v s="$lib" '$1 != s' "$work/ldconfig.machine" > "$work/ldconfig"
pkg=$work/pkg
mkdir -p "$pkg/DEBIAN" "$pkg/usr/lib/$arch" "$work/carry/debs/pcre2"
cp "$lib_path" "$pkg/usr/lib/$arch/$lib"
printf 'Package: fake-lib\nVersion: 1.0\nArchitecture: amd64\nMaintainer: vispec\nDescription: test\n' > "$pkg/DEBIAN/control"
dpkg-deb --root-owner-group -b "$pkg" "$work/carry/debs/pcre2/fake-lib_1.0_amd64.deb" > /dev/null
VISPEC_GPU_CHECK_LDCONFIG=$work/ldconfig VISPEC_GPU_CARRY=$work/carry VISPEC_PREFIX=$work/prefix \
  deps_only libs "$work/no-pcre2" --binaries "$work/bin"

"$py" - "$work" "$lib" <<'PY'
import json, os, subprocess, sys
work, lib = sys.argv[1], sys.argv[2]
def load(name):
    return json.load(open(f"{work}/{name}.json"))
every = ["mpi", "hdf5", "spdlog", "fmt", "yaml-cpp", "nlohmann-json", "cli11", "gtest", "png", "jpeg", "zlib",
         "sentencepiece", "pcre2", "utf8proc", "fashion-mnist"]
d = load("no-pcre2")
assert sorted(d["deps"]) == sorted(every), d["deps"]
assert {k for k, v in d["deps"].items() if v == "prefix"} == {"pcre2", "utf8proc"}, d["deps"]
assert set(d["deps"].values()) == {"machine", "prefix"}, d["deps"]
assert "pcre2.h" in d["lacks"]["pcre2"] and "utf8proc.h" in d["lacks"]["utf8proc"], d["lacks"]
assert d["libs"] is None, d["libs"]  # no binaries: no library decisions
d = load("nothing")
assert d["deps"] == {k: "prefix" for k in every}, d["deps"]
assert "mpirun" in d["lacks"]["mpi"], d["lacks"]
d = load("no-spdlog")
assert {k for k, v in d["deps"].items() if v == "prefix"} == {"spdlog", "fmt"}, d["deps"]
d = load("libs")
assert d["deps"]["pcre2"] == "prefix", d["deps"]
libs = d["libs"]
assert libs[lib] == "prefix" and libs["libc.so.6"] == "machine", libs
assert all(v == "machine" for k, v in libs.items() if k != lib), libs
libdir = d["libdir"]
assert os.listdir(libdir) == [lib], os.listdir(libdir)  # the machine's own libraries are never shadowed
assert os.path.realpath(f"{libdir}/{lib}").startswith(os.path.realpath(f"{work}/prefix/pcre2/")), libdir
run = subprocess.run([f"{work}/bin/vispec", "--version"], env=dict(os.environ, LD_LIBRARY_PATH=libdir),
                     capture_output=True, text=True)
assert run.returncode == 0, run.stderr
print(f"ok: gpu_check.sh --deps-only: pcre2 and utf8proc, everything, spdlog and fmt from the prefix; {lib} linked")
PY
