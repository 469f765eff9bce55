#!/usr/bin/env bash
# Every decoder's demo tokens at temperature 0 and 1 (one image per prompt of jobs/demo.yaml), as one digest line
# each: run it before and after a change that should not move any token (a cut operator, a fused kernel), then
# diff the two files. A decoder whose run fails says so on its line.
#
#   bash scripts/decoder_tokens.sh OUTDIR [VISPEC]     # OUTDIR/digests.txt; VISPEC defaults to build/vispec
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: scripts/decoder_tokens.sh OUTDIR [VISPEC]}
vispec=${2:-build/vispec}
mkdir -p "$out"
decoders=$("$vispec" decoders | sed -n 's/^\([a-z_0-9]*\): .*/\1/p')
for d in $decoders; do
  for t in 0 1; do
    run=$out/run-$d-$t
    if "$vispec" run jobs/demo.yaml --out "$run" --new --set decoder.name="$d" --set decoder.temperature=$t \
      --set images_per_prompt=1 > "$run.log" 2>&1; then
      echo "$d T=$t $(cat "$run"/tokens/*.npy | sha256sum | cut -c1-16)"
    else
      echo "$d T=$t FAILED (exit $?; $run.log)"
    fi
  done
done | tee "$out/digests.txt"
