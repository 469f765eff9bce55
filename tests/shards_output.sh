#!/usr/bin/env bash
# `output: shards`: one tar per unit (WebDataset's layout) instead of two files per sample. Checked against a
# run of the same job with `output: files`: every archive holds, per sample in id order, <id>.png,
# <id>.tokens.npy and <id>.json, whose bytes are the files run's PNG and .npy and its metrics line; the journal
# lists one archive and one metrics file per unit with Python zlib's CRC-32; a SIGKILL while an archive is
# written leaves a temporary that the rerun removes; a SIGTERM'd run leaves a summary, and the resume extends
# metrics.jsonl in place instead of rebuilding it (a damaged one is rebuilt); a flipped byte in an archive is
# found by `vispec verify`, repaired, and the rerun writes the same members again; eval and grid read the
# archives; the README's tarfile and WebDataset examples run on them. Also: the other `output` is refused on
# the same directory (the fingerprint), in one line; `vispec export` writes the same .npz from either output.
set -euo pipefail
vispec=$1 src=$2
source "$src/tests/mpi_common.sh"  # sets $py and a $work directory removed at exit
venv_py=${VISPEC_TORCH_PYTHON:-$src/.venv/bin/python3}  # has webdataset (scripts/requirements.txt)

write_job "$work/ref"
"$vispec" run "$work/ref/job.yaml" 2> "$work/ref.log" || { cat "$work/ref.log"; fail "files run"; }
write_job "$work/a"
echo "output: shards" >> "$work/a/job.yaml"
a=$work/a/out

# 1. Killed while unit 2's archive is written: its temporary stays, no summary.
set +e; VISPEC_FAULT=kill-mid-unit@2 "$vispec" run "$work/a/job.yaml" 2> "$work/a1.log"; rc=$?; set -e
[ "$rc" -ne 0 ] || fail "the injected kill did not happen"
ls "$a/shards" | grep -q '^unit-000002\.tar\.tmp\.[0-9]*$' || { ls "$a/shards"; fail "no temporary of unit 2's archive"; }
[ ! -e "$a/images" ] && [ ! -e "$a/tokens" ] || fail "a shards run made images/ or tokens/"

# 2. Stopped by SIGTERM after one more unit: the summary records what metrics.jsonl holds.
VISPEC_FAULT=slow@400 "$vispec" run "$work/a/job.yaml" 2> "$work/a2.log" &
pid=$!
for _ in $(seq 1 400); do [ "$(journal_units "$a")" -ge 3 ] && break; sleep 0.05; done
kill -s TERM $pid
rc=0; wait $pid || rc=$?
[ "$rc" -eq 4 ] || { cat "$work/a2.log"; fail "SIGTERM: expected exit 4, got $rc"; }
grep -q "leftover files removed" "$work/a2.log" || { cat "$work/a2.log"; fail "the temporary was not removed"; }
! ls "$a/shards" | grep -q tmp || fail "a temporary archive is left"
cp "$a/metrics.jsonl" "$work/metrics.stopped"
inode=$(stat -c %i "$a/metrics.jsonl")
# An unfinished run: export refuses it in one line, naming the units done, and --partial exports them.
set +e; "$vispec" export "$a" --npz "$work/partial.npz" 2> "$work/export-partial.log"; rc=$?; set -e
[ "$rc" -eq 2 ] && [ "$(wc -l < "$work/export-partial.log")" -eq 1 ] && [ ! -e "$work/partial.npz" ] &&
  grep -q "units done (.* images): the run is not finished" "$work/export-partial.log" ||
  { cat "$work/export-partial.log"; fail "export of an unfinished run: exit $rc"; }
"$vispec" export "$a" --npz "$work/partial.npz" --partial > "$work/export-partial.log" 2>&1 &&
  grep -q -- "(--partial: [0-9]* of [0-9]* units)" "$work/export-partial.log" ||
  { cat "$work/export-partial.log"; fail "export --partial"; }

# 3. The resume finishes the job and extends metrics.jsonl where it is.
"$vispec" resume "$a" 2> "$work/a3.log" || { cat "$work/a3.log"; fail "resume"; }
! grep -q "rebuilt" "$work/a3.log" || { cat "$work/a3.log"; fail "metrics.jsonl was rebuilt, not extended"; }
[ "$(stat -c %i "$a/metrics.jsonl")" = "$inode" ] || fail "metrics.jsonl was replaced, not extended"
cmp -s "$work/metrics.stopped" <(head -c "$(stat -c %s "$work/metrics.stopped")" "$a/metrics.jsonl") ||
  fail "the stopped run's metrics lines changed"
"$vispec" verify "$a" > "$work/v1.log" || { cat "$work/v1.log"; fail "verify after the resume"; }

"$py" - "$work/ref/out" "$a" <<'PY'
import io, json, os, sys, tarfile, zlib
ref, a = sys.argv[1:3]
assert sorted(os.listdir(f"{a}/shards")) == [f"unit-{u:06d}.tar" for u in range(5)], os.listdir(f"{a}/shards")
lines = {json.loads(l)["sample_id"]: l.rstrip("\n") for l in open(f"{a}/metrics.jsonl")}
assert sorted(lines) == list(range(18)), sorted(lines)
def drop_time(d):
    d = dict(d); d.pop("wall_ms"); return d
ref_lines = {json.loads(l)["sample_id"]: json.loads(l) for l in open(f"{ref}/metrics.jsonl")}
for u in range(5):
    tar = tarfile.open(f"{a}/shards/unit-{u:06d}.tar")
    ids = range(4 * u, min(4 * u + 4, 18))
    expected = [f"{i:08d}.{ext}" for i in ids for ext in ("png", "tokens.npy", "json")]
    assert tar.getnames() == expected, (tar.getnames(), expected)
    for m in tar.getmembers():
        assert m.isfile() and m.mtime == 0 and m.mode == 0o644 and m.uid == 0, m
        data = tar.extractfile(m).read()
        stem, ext = m.name.split(".", 1)
        if ext == "json":
            assert data.decode().rstrip("\n") == lines[int(stem)], m.name
            assert drop_time(json.loads(data)) == drop_time(ref_lines[int(stem)]), m.name
        else:
            same = f"{ref}/images/{stem}.png" if ext == "png" else f"{ref}/tokens/{stem}.npy"
            assert data == open(same, "rb").read(), f"{m.name} differs from {same}"
# The journal: per unit one archive and one metrics file, with zlib's CRC-32.
records = [json.loads(l) for l in open(f"{a}/journal.jsonl")][1:]
assert sorted(r["unit"] for r in records) == list(range(5)), records
for r in records:
    names = sorted(f[0] for f in r["files"])
    assert names == [f"metrics/unit-{r['unit']:06d}.jsonl", f"shards/unit-{r['unit']:06d}.tar"], names
    for name, size, crc in r["files"]:
        data = open(f"{a}/{name}", "rb").read()
        assert len(data) == size and f"{zlib.crc32(data):08x}" == crc, name
s = json.load(open(f"{a}/summary.json"))
assert s["complete"] and s["images"] == 18, s
held = [u for lo, hi in s["metrics"]["units"] for u in range(lo, hi + 1)]
assert sorted(held) == list(range(5)), s["metrics"]
data = open(f"{a}/metrics.jsonl", "rb").read()
assert s["metrics"]["bytes"] == len(data) and s["metrics"]["crc32"] == f"{zlib.crc32(data):08x}", s["metrics"]
assert data == b"".join(open(f"{a}/metrics/unit-{u:06d}.jsonl", "rb").read() for u in held)
print("ok: archives, journal and metrics.jsonl read back by tarfile and zlib")
PY
echo "ok: killed mid-archive, stopped, resumed: metrics.jsonl extended in place"

# 4. The README's examples (Python's tarfile, and WebDataset) on these archives.
awk '/<!-- run by tests\/shards_output.sh -->/{getline; grab=1; next} grab && /^```$/{grab=0; print "#---"} grab' \
  "$src/README.md" > "$work/readme_examples.py"
[ "$(grep -c '^#---$' "$work/readme_examples.py")" -eq 2 ] || { cat "$work/readme_examples.py"; fail "the README's two shard examples"; }
(cd "$work/a" && "$venv_py" "$work/readme_examples.py") > "$work/readme.log" 2>&1 || { cat "$work/readme.log"; fail "README examples"; }
[ "$(grep -c "^00000017 (32, 32) (16, 16)" "$work/readme.log")" -eq 2 ] || { cat "$work/readme.log"; fail "README examples' output"; }
echo "ok: the README's tarfile and WebDataset examples read the archives"

# 5. eval and grid read the archives: the same judgement and sheet as from the files run.
for d in ref a; do
  "$vispec" eval "$work/$d/out" --threads 1 > /dev/null 2> "$work/eval-$d.log" || { cat "$work/eval-$d.log"; fail "eval $d"; }
  "$vispec" grid "$work/$d/out" --png "$work/grid-$d.png" 2> "$work/grid-$d.log" || { cat "$work/grid-$d.log"; fail "grid $d"; }
done
cmp -s "$work/grid-ref.png" "$work/grid-a.png" || fail "grid sheets differ"
"$py" -c "import json,sys; a,b=(json.load(open(p)) for p in sys.argv[1:3]); [a.pop('model_config',0) for _ in (0,)]; \
assert a['fid'] == b['fid'] and a['class_agreement'] == b['class_agreement'], (a, b)" "$work/ref/out/eval.json" "$a/eval.json"
echo "ok: eval and grid read the archives"

# 6. A flipped byte in an archive: verify finds it, --repair un-journals the unit, the rerun writes it again.
# Members as a re-decode reproduces them: images and tokens byte for byte, metrics without their timings.
members() {
  "$py" - "$a" <<'PY'
import hashlib, json, sys, tarfile
for u in range(5):
    with tarfile.open(f"{sys.argv[1]}/shards/unit-{u:06d}.tar") as t:
        for m in t:
            data = t.extractfile(m).read()
            if m.name.endswith(".json"):
                data = json.dumps({k: v for k, v in json.loads(data).items() if not k.endswith("_ms")}).encode()
            print(m.name, hashlib.md5(data).hexdigest())
PY
}
md5_before=$(members)
printf '\x55' | dd of="$a/shards/unit-000003.tar" bs=1 seek=700 conv=notrunc status=none
set +e; "$vispec" verify "$a" > "$work/v2.log" 2>&1; rc=$?; set -e
[ "$rc" -eq 6 ] && grep -q "unit 3: .*shards/unit-000003.tar: CRC-32" "$work/v2.log" || { cat "$work/v2.log"; fail "verify: the flipped byte"; }
"$vispec" verify "$a" --repair > "$work/v3.log" || { cat "$work/v3.log"; fail "repair"; }
[ ! -e "$a/shards/unit-000003.tar" ] || fail "repair left the broken archive"
"$vispec" run "$work/a/job.yaml" 2> "$work/a4.log" || { cat "$work/a4.log"; fail "rerun after repair"; }
[ "$(members)" = "$md5_before" ] || fail "the recomputed archive differs"
"$vispec" verify "$a" > /dev/null || fail "verify after the rerun"
echo "ok: a damaged archive is found, repaired and written again (images and tokens byte for byte)"

# 7. A metrics.jsonl of another size than the summary says is rebuilt whole by the next run.
truncate -s -1 "$a/metrics.jsonl"
"$vispec" run "$work/a/job.yaml" 2> "$work/a5.log" || { cat "$work/a5.log"; fail "rerun"; }
grep -q "metrics.jsonl: rebuilt from the units' files: .* bytes, the summary says" "$work/a5.log" ||
  { cat "$work/a5.log"; fail "no rebuild of the damaged metrics.jsonl"; }
"$vispec" verify "$a" > /dev/null || fail "verify after the rebuild"
echo "ok: a damaged metrics.jsonl is rebuilt"

# 8. The same directory with the other output is another job: refused in one line, nothing touched.
before=$(md5sum < "$a/journal.jsonl")
set +e; "$vispec" run "$work/a/job.yaml" --set output=files 2> "$work/drift.log"; rc=$?; set -e
[ "$rc" -eq 2 ] && [ "$(wc -l < "$work/drift.log")" -eq 1 ] || { cat "$work/drift.log"; fail "output drift: exit $rc"; }
grep -q "output" "$work/drift.log" || { cat "$work/drift.log"; fail "output drift: the line does not name the field"; }
[ "$before" = "$(md5sum < "$a/journal.jsonl")" ] && [ ! -e "$a/images" ] || fail "output drift: the directory changed"
echo "ok: files on a shards directory refused in one line"

# 9. vispec export: the ADM evaluator's .npz (numpy.load(...)["arr_0"], uint8 [N, H, W, 3]) from either output,
# the same array, every image its PNG's pixels (grayscale in three equal channels), in sample id order; a
# directory without a run is one line and exit 2, nothing written.
for d in ref a; do
  "$vispec" export "$work/$d/out" --npz "$work/$d.npz" > "$work/export-$d.log" 2>&1 || { cat "$work/export-$d.log"; fail "export $d"; }
  grep -q "18 images" "$work/export-$d.log" || { cat "$work/export-$d.log"; fail "export $d: the count"; }
done
cmp -s "$work/ref.npz" "$work/a.npz" || fail "the two outputs' .npz differ"
"$venv_py" - "$work/ref.npz" "$work/ref/out" <<'PY'
import sys, zipfile
import numpy as np
from PIL import Image
path, out = sys.argv[1:3]
assert zipfile.ZipFile(path).testzip() is None, "a member's CRC-32 is wrong"
arr = np.load(path)["arr_0"]
assert arr.dtype == np.uint8 and arr.ndim == 4 and arr.shape[0] == 18 and arr.shape[3] == 3, (arr.dtype, arr.shape)
for i in range(18):
    png = np.asarray(Image.open(f"{out}/images/{i:08d}.png"))
    if png.ndim == 2:
        png = np.repeat(png[:, :, None], 3, axis=2)
    assert np.array_equal(arr[i], png[:, :, :3]), i
print("npz", arr.shape)
PY
mkdir -p "$work/empty"
set +e; "$vispec" export "$work/empty" --npz "$work/empty.npz" 2> "$work/export-empty.log"; rc=$?; set -e
[ "$rc" -eq 2 ] && [ "$(wc -l < "$work/export-empty.log")" -eq 1 ] && [ ! -e "$work/empty.npz" ] ||
  { cat "$work/export-empty.log"; fail "export of a directory without a run: exit $rc"; }
ls "$work" | grep -q "empty.npz.tmp" && fail "export left a temporary"
# Inside the run's protocol: never a file inside OUT (the journal untouched), a stray empty shards/ folder in a
# files run is not its output (the journal names it), a temporary a killed export left is removed (only one whose
# process is gone), and a run writing OUT excludes the export.
before=$(md5sum < "$work/ref/out/journal.jsonl")
set +e; "$vispec" export "$work/ref/out" --npz "$work/ref/out/journal.jsonl" 2> "$work/export-inside.log"; rc=$?; set -e
[ "$rc" -eq 2 ] && [ "$(wc -l < "$work/export-inside.log")" -eq 1 ] && [ "$before" = "$(md5sum < "$work/ref/out/journal.jsonl")" ] ||
  { cat "$work/export-inside.log"; fail "export into OUT: exit $rc"; }
mkdir "$work/ref/out/shards"
sleep 0 & wait $!; dead=$!  # a pid whose process is gone
touch "$work/again.npz.tmp.$dead" "$work/again.npz.tmp.$$"
"$vispec" export "$work/ref/out" --npz "$work/again.npz" > "$work/export-again.log" 2>&1 &&
  grep -q "18 images" "$work/export-again.log" || { cat "$work/export-again.log"; fail "export beside a stray shards/"; }
rmdir "$work/ref/out/shards"
cmp -s "$work/ref.npz" "$work/again.npz" || fail "the export beside a stray shards/ differs"
[ ! -e "$work/again.npz.tmp.$dead" ] && [ -e "$work/again.npz.tmp.$$" ] || fail "the killed export's temporary"
flock "$work/ref/out/.vispec.lock" -c "touch '$work/locked'; sleep 3" &
holder=$!
for _ in $(seq 1 100); do [ -e "$work/locked" ] && break; sleep 0.05; done
set +e; "$vispec" export "$work/ref/out" --npz "$work/locked.npz" 2> "$work/export-locked.log"; rc=$?; set -e
wait $holder
[ "$rc" -eq 2 ] && grep -q "a vispec run is writing it" "$work/export-locked.log" && [ ! -e "$work/locked.npz" ] ||
  { cat "$work/export-locked.log"; fail "export while a run writes: exit $rc"; }
echo "ok: vispec export writes the ADM evaluator's .npz from either output, inside the run's protocol"
