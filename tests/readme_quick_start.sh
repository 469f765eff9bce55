#!/usr/bin/env bash
# The README's quick start runs as written: every `./build/vispec ...` line of its "## Quick start" block, in
# order, with this build's vispec, from a scratch directory whose jobs/ and configs/ are the checkout's (so the
# outputs, out/ and grid.png, land there, not in the checkout); each must exit 0 and leave what its comment
# says.
set -euo pipefail
vispec=$1 src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ln -s "$src/jobs" "$work/jobs"
ln -s "$src/configs" "$work/configs"
section=$(sed -n '/^## Quick start$/,/^## /p' "$src/README.md")
mapfile -t commands < <(printf '%s\n' "$section" | sed -n 's|^    \./build/vispec \(.*\)$|\1|p' | sed 's|  *#.*$||')
[ "${#commands[@]}" -ge 4 ] || { printf '%s\n' "$section"; echo "quick start: found ${#commands[@]} commands"; exit 1; }
cd "$work"
for c in "${commands[@]}"; do
  echo "quick start: vispec $c"
  read -ra args <<< "$c"
  "$vispec" "${args[@]}" > "$work/out.log" 2>&1 || { cat "$work/out.log"; echo "quick start: 'vispec $c' failed"; exit 1; }
done
[ "$(ls out/demo/images | wc -l)" -eq 40 ] || { ls out/demo/images; echo "quick start: the demo did not write 40 images"; exit 1; }
[ -s grid.png ] && [ -s out/demo/eval.json ] || { ls; echo "quick start: no grid.png or eval.json"; exit 1; }
[ "$(ls out/eagle2/images | wc -l)" -eq 40 ] || { echo "quick start: the eagle2 run did not write 40 images"; exit 1; }
grep -q '"decoder":"eagle2"' out/eagle2/metrics.jsonl || { head -1 out/eagle2/metrics.jsonl; echo "quick start: not eagle2"; exit 1; }
echo "ok: the README's ${#commands[@]} quick start commands run as written"
