#!/usr/bin/env bash
# `cmake --install`: the installed vispec runs from anywhere with an empty environment (its RUNPATH names the
# LibTorch, MPI and HDF5 it was built against, and nothing of the build tree), and the demo job installed
# beside it decodes with the embedded model.
set -euo pipefail
build=$1
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
cmake --install "$build" --prefix "$prefix" > "$prefix.log" 2>&1 || { cat "$prefix.log"; fail "cmake --install"; }
rm -f "$prefix.log"
[ -x "$prefix/bin/vispec" ] || fail "no $prefix/bin/vispec"
runpath=$(readelf -d "$prefix/bin/vispec" | sed -n "s/.*RUNPATH.*\[\(.*\)\]/\1/p")
echo "$runpath" | grep -q "torch/lib" || fail "the installed RUNPATH does not name LibTorch: $runpath"
! echo "$runpath" | grep -q "$(realpath "$build")" || fail "the installed RUNPATH names the build tree: $runpath"
(cd / && env -i PATH=/usr/bin:/bin "$prefix/bin/vispec" decoders > "$prefix/decoders.txt") || fail "vispec decoders"
grep -q "^eagle2: " "$prefix/decoders.txt" || fail "vispec decoders lists no eagle2"
(cd / && env -i PATH=/usr/bin:/bin "$prefix/bin/vispec" run "$prefix/share/vispec/jobs/demo.yaml" --set images_per_prompt=1 \
   --set batch_size=10 --set unit_size=10 --set threads=1 --set device=cpu --out "$prefix/out" 2> "$prefix/run.log") ||
  { cat "$prefix/run.log"; fail "the installed demo job"; }
[ "$(ls "$prefix/out/images" | wc -l)" -eq 10 ] || fail "the installed demo made $(ls "$prefix/out/images" | wc -l) images"
echo "ok: installed vispec runs from / with an empty environment; RUNPATH $runpath"
