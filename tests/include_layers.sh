#!/usr/bin/env bash
# The layers of the code (docs/layout.md), bottom up: core -> kernels, io -> models -> decoding, eval -> train ->
# workers -> scheduler, bench -> apps. A file includes only from its own folder or from a layer below; an include
# that runs upward (or sideways, between two folders of one layer) fails here, naming the file and line.
set -euo pipefail
src=$1
py=${VISPEC_TEST_PYTHON:-/usr/bin/python3}
"$py" - "$src" <<'PY'
import os, re, sys
src = sys.argv[1]
layer = {"core": 0, "kernels": 1, "io": 1, "models": 2, "decoding": 3, "eval": 3, "train": 4, "workers": 5,
         "scheduler": 6, "bench": 6, "apps": 7}
wrong, seen = [], 0
for top in layer:
    for root, _, files in os.walk(os.path.join(src, top)):
        for name in files:
            if not name.endswith((".h", ".cpp", ".cu", ".cuh")):
                continue
            path = os.path.join(root, name)
            for number, line in enumerate(open(path, encoding="utf-8"), 1):
                m = re.match(r'#include "([a-z_]+)/', line)
                if not m or m.group(1) not in layer:
                    continue
                seen += 1
                to = m.group(1)
                if to != top and layer[to] >= layer[top]:
                    wrong.append(f"{os.path.relpath(path, src)}:{number}: {top}/ includes {line.split()[1]}")
assert seen > 500, f"only {seen} includes found under {src}: not the source tree?"
assert not wrong, "includes that run up a layer:\n" + "\n".join(wrong)
print(f"ok: {seen} includes, none up a layer")
PY
