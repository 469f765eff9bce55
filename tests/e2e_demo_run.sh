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

# The first run dies as its second unit starts (SIGKILL); `vispec resume OUT`, with no flags, finishes the job
# from the job.yaml the run kept (its --set overrides applied, its defaults filled in, its paths absolute).
set +e
VISPEC_FAULT=kill-at-unit@1 "$vispec" run jobs/demo.yaml --out "$work/a" --set images_per_prompt=1 \
  --set batch_size=5 --set unit_size=5 2> "$work/killed.log"
code=$?
set -e
[ "$code" -ne 0 ] || { cat "$work/killed.log" >&2; echo "e2e: the injected kill did not happen"; exit 1; }
[ "$(ls "$work/a/images" | wc -l)" -eq 5 ] || { ls "$work/a/images" >&2; echo "e2e: expected unit 0 alone"; exit 1; }
(cd / && "$vispec" resume "$work/a") 2> "$work/run.log" || { cat "$work/run.log" >&2; exit 1; }
cat "$work/run.log" >&2
grep -q "(5 this run" "$work/run.log" || { echo "e2e: the resume did not make the other unit's 5 images"; exit 1; }
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
assert [r["images"] for r in summary["runs"]] == [5], summary["runs"]  # the killed run left no summary
# The kept job (no YAML library needed: one field per line, maps in flow style).
job = dict(l.split(": ", 1) for l in open(f"{out}/job.yaml").read().splitlines() if not l.startswith("#"))
assert job["model"].startswith("{config: /") and job["prompts"].startswith("/") and job["out"] == out, job
assert job["images_per_prompt"] == "1" and job["batch_size"] == "5" and job["unit_size"] == "5", job
assert job["decoder"] == "{name: ar, cfg_scale: 2, temperature: 1, top_k: 0, top_p: 1}", job["decoder"]
assert not [f for f in os.listdir(f"{out}/images") if ".tmp" in f], "temporary files left behind"
print("e2e: outputs read back OK")
PY

# vispec eval finds the model through summary.json and judges the 10 PNGs.
"$vispec" eval "$work/a" --threads 1 | tee "$work/eval.txt"
grep -q "10 images: class agreement" "$work/eval.txt"
"$py" -c "import json,sys; e=json.load(open(sys.argv[1])); assert e['images']==10 and 0<=e['class_agreement']<=1 and e['fid']>0, e" "$work/a/eval.json"

# Rerunning a finished job recomputes nothing and changes no file (the journal says every unit is done), from
# the job file or from the run's directory, moved elsewhere; the summary keeps the first run's throughput.
before=$(cd "$work/a" && cat images/* tokens/* metrics.jsonl | md5sum)
"$vispec" run jobs/demo.yaml --out "$work/a" --set images_per_prompt=1 --set batch_size=5 --set unit_size=5 2>&1 |
  grep -q "(0 this run"
mv "$work/a" "$work/moved"
"$vispec" run "$work/moved" 2>&1 | grep -q "(0 this run"
after=$(cd "$work/moved" && cat images/* tokens/* metrics.jsonl | md5sum)
[ "$before" = "$after" ] || { echo "e2e: a rerun of a finished job changed its outputs"; exit 1; }
"$py" - "$work/moved" <<'PY'
import json, sys
out = sys.argv[1]
s = json.load(open(f"{out}/summary.json"))
assert [r["images"] for r in s["runs"]] == [5, 0, 0], s["runs"]
assert s["images_per_s"] == s["runs"][0]["images_per_s"] > 0, s
assert f"out: {out}\n" in open(f"{out}/job.yaml").read(), "job.yaml names the directory where it is now"
PY
set +e
"$vispec" resume "$work/nowhere" 2> "$work/bad.log"; code=$?
set -e
[ "$code" -eq 2 ] && grep -q "^vispec: error: .*nowhere: not a directory" "$work/bad.log" ||
  { cat "$work/bad.log"; echo "e2e: resume of a missing directory: exit $code"; exit 1; }
# A folder of the user's with a job.yaml of their own and no journal is not a run's: resume and run refuse it in
# one line and write nothing there (the user's job.yaml unchanged, no other file made).
mkdir "$work/mine"
cp jobs/demo.yaml "$work/mine/job.yaml"
echo "my notes" > "$work/mine/notes.txt"
for cmd in resume run run-out new; do
  set +e
  case $cmd in
    run-out) "$vispec" run jobs/demo.yaml --out "$work/mine" 2> "$work/mine.log" ;;
    new) "$vispec" run jobs/demo.yaml --out "$work/mine" --new 2> "$work/mine.log" ;;
    *) "$vispec" $cmd "$work/mine" 2> "$work/mine.log" ;;
  esac
  code=$?
  set -e
  [ "$code" -eq 2 ] && grep -Eq "mine: no vispec journal \(journal.jsonl\) here|mine/(job.yaml|notes.txt): (a run would write|--new would start over) in a directory that holds no vispec journal" "$work/mine.log" ||
    { cat "$work/mine.log"; echo "e2e: $cmd of a folder that is not a run's: exit $code"; exit 1; }
  cmp -s jobs/demo.yaml "$work/mine/job.yaml" && [ "$(ls -A "$work/mine" | sort | tr '\n' ' ')" = "job.yaml notes.txt " ] ||
    { ls -la "$work/mine"; echo "e2e: $cmd wrote into a folder that is not a run's"; exit 1; }
done
# verify (and --repair), distill-index and export read or repair a run's own files: on that folder, and on one
# whose journal.jsonl is the user's (no vispec header), each refuses in one line and writes nothing.
mkdir "$work/theirs"
echo "my own journal" > "$work/theirs/journal.jsonl"
for dir in mine theirs; do
  before=$(ls -A "$work/$dir" | sort | tr '\n' ' ')
  for cmd in verify repair distill-index export; do
    set +e
    case $cmd in
      repair) "$vispec" verify "$work/$dir" --repair 2> "$work/cmd.log" ;;
      export) "$vispec" export "$work/$dir" --npz "$work/$dir.npz" 2> "$work/cmd.log" ;;
      *) "$vispec" $cmd "$work/$dir" 2> "$work/cmd.log" ;;
    esac
    code=$?
    set -e
    [ "$code" -eq 2 ] && grep -q "$dir: no vispec journal (journal.jsonl) here" "$work/cmd.log" ||
      { cat "$work/cmd.log"; echo "e2e: $cmd of a folder that is not a run's: exit $code"; exit 1; }
    [ "$(ls -A "$work/$dir" | sort | tr '\n' ' ')" = "$before" ] && [ ! -e "$work/$dir.npz" ] ||
      { ls -la "$work/$dir"; echo "e2e: $cmd wrote into or beside a folder that is not a run's"; exit 1; }
  done
done
echo "e2e: rerun of a finished job is a no-op"
