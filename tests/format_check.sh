#!/usr/bin/env bash
# Every C++ and CUDA file of the repository follows the house style (.clang-format): a file that does not is
# named with the first lines clang-format would change; `clang-format -i FILE` fixes it. Exit 77 (skipped) where
# no clang-format 14 is installed (the GPU machine); another version formats differently, so it is not used.
set -euo pipefail
src=$1
cf=$(command -v clang-format-14 || true)
if [ -z "$cf" ]; then
  echo "format_check: skipped: no clang-format-14 (scripts/setup.sh installs it)"
  exit 77
fi
cd "$src"
files=$(git ls-files '*.h' '*.cpp' '*.cu' '*.cuh' 2>/dev/null || find . -name '*.h' -o -name '*.cpp' -o -name '*.cu' -o -name '*.cuh')
[ -n "$files" ] || { echo "format_check: no C++ files under $src"; exit 1; }
bad=0 count=0
for f in $files; do
  count=$((count + 1))
  if ! out=$("$cf" --style=file "$f" | diff -u "$f" - 2>&1); then
    echo "$f: not in the house style (clang-format -i $f):"
    echo "$out" | sed -n '3,12p'
    bad=$((bad + 1))
  fi
done
[ "$bad" -eq 0 ] || { echo "format_check: $bad of $count files differ from .clang-format"; exit 1; }
echo "format_check: ok: $count files"
