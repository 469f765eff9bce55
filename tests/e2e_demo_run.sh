#!/usr/bin/env bash
# End to end on the embedded model: the demo job (one image per class), its outputs read back by numpy (Debian's
# /usr/bin/python3 with python3-numpy unless VISPEC_TEST_PYTHON names another, not whatever python3 is first on PATH) and
# by a PNG header parse and judged by vispec eval; a rerun must change nothing.
set -euo pipefail
# The Python that reads outputs back (numpy, h5py): Debian's by default, the GPU machine's via CMake there.
py=${VISPEC_TEST_PYTHON:-/usr/bin/python3}
vispec=$1
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$src"

"$vispec" run jobs/demo.yaml --out "$work/a" --set images_per_prompt=1 --set batch_size=10 2> "$work/run.log" ||
  { cat "$work/run.log" >&2; exit 1; }
cat "$work/run.log" >&2
# The run says, in one line, every field its decoder reads (defaults filled in where a job leaves one out).
grep -q "decoder ar: cfg_scale 2, temperature 1, top_k 0, top_p 1" "$work/run.log" ||
  { echo "no line of the resolved decoder fields"; grep decoder "$work/run.log"; exit 1; }
"$py" - "$work/a" <<'PY'
import json, struct, sys, zlib, os
import numpy as np
out = sys.argv[1]
metrics = [json.loads(l) for l in open(f"{out}/metrics.jsonl")]
assert len(metrics) == 10, len(metrics)
assert sorted(m["sample_id"] for m in metrics) == list(range(10))
for m in metrics:
    for k in ("sample_id", "prompt", "seed", "decoder", "target_forwards", "wall_ms"):
        assert k in m, (k, m)
    assert m["decoder"] == "ar" and m["target_forwards"] == 256, m
    t = np.load(f"{out}/tokens/{m['sample_id']:08d}.npy")
    assert t.shape == (16, 16) and t.dtype == np.int32, (t.shape, t.dtype)
    assert 0 <= t.min() and t.max() < 512
    png = open(f"{out}/images/{m['sample_id']:08d}.png", "rb").read()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    w, h = struct.unpack(">II", png[16:24])
    assert (w, h) == (32, 32), (w, h)
summary = json.load(open(f"{out}/summary.json"))
assert summary["images"] == 10 and summary["images_per_s"] > 0, summary
assert not [f for f in os.listdir(f"{out}/images") if ".tmp" in f], "temporary files left behind"
print("e2e: outputs read back OK")
PY

# vispec eval finds the model through summary.json and judges the 10 PNGs.
"$vispec" eval "$work/a" --threads 1 | tee "$work/eval.txt"
grep -q "10 images: class agreement" "$work/eval.txt"
"$py" -c "import json,sys; e=json.load(open(sys.argv[1])); assert e['images']==10 and 0<=e['class_agreement']<=1 and e['fid']>0, e" "$work/a/eval.json"

# Rerunning a finished job recomputes nothing and changes no file (the journal says every unit is done).
before=$(cd "$work/a" && cat images/* tokens/* metrics.jsonl | md5sum)
"$vispec" run jobs/demo.yaml --out "$work/a" --set images_per_prompt=1 --set batch_size=10 2>&1 | grep -q "(0 this run"
after=$(cd "$work/a" && cat images/* tokens/* metrics.jsonl | md5sum)
[ "$before" = "$after" ] || { echo "e2e: a rerun of a finished job changed its outputs"; exit 1; }
echo "e2e: rerun of a finished job is a no-op"
