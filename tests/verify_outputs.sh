#!/usr/bin/env bash
# Journaled outputs are checked (issue: "journaled outputs are never checked"). The journal lists every file of
# a unit with its size and CRC-32, equal to what Python's zlib computes from the files. A distillation unit
# file deleted or truncated after its run is refused by distill-index and by the trainers (one line naming it)
# and recomputed by the rerun; a deleted PNG or unit metrics file likewise; a same-size corruption, which only
# reading finds, is reported by `vispec verify` (exit 6) and un-journaled by `verify --repair`. After each
# repair the outputs (PNGs, tokens, metrics, HDF5 files) equal an uninterrupted run's, byte for byte.
set -euo pipefail
vispec=$1 src=$2
source "$src/tests/mpi_common.sh"  # sets $py and a $work directory removed at exit

distill_job() {  # distill_job DIR
  write_job "$1"
  printf 'distill: {streams: cond, dtype: bf16}\n' >> "$1/job.yaml"
}
same_distill() {  # unit files and index byte for byte (HDF5 object timestamps are off)
  diff -r "$1/distill" "$2/distill" > /dev/null || { echo "FAIL: distillation files differ: $1 $2"; return 1; }
}
expect_fail() {  # expect_fail CODE PATTERN LOG COMMAND...: exit CODE and PATTERN in its output
  local code=$1 pattern=$2 log=$3; shift 3
  set +e; "$@" > "$log" 2>&1; local rc=$?; set -e
  [ "$rc" -eq "$code" ] || { cat "$log"; fail "expected exit $code, got $rc: $*"; }
  grep -q -- "$pattern" "$log" || { cat "$log"; fail "no '$pattern' in the output of: $*"; }
}

distill_job "$work/ref"
"$vispec" run "$work/ref/job.yaml" 2> "$work/ref.log" || { cat "$work/ref.log"; fail "reference run"; }
distill_job "$work/a"
a=$work/a/out
"${MPIRUN[@]}" -np 2 "$vispec" run "$work/a/job.yaml" 2> "$work/a.log" || { cat "$work/a.log"; fail "2-rank run"; }

# 1. Every unit's record lists its files, with sizes and CRC-32s another tool agrees with.
"$py" - "$a" <<'PY' || fail "journal file lists"
import json, os, sys, zlib
out = sys.argv[1]
records = [json.loads(l) for l in open(f"{out}/journal.jsonl")][1:]
assert sorted(r["unit"] for r in records) == [0, 1, 2, 3, 4]
for r in records:
    names = [f[0] for f in r["files"]]
    assert sum(n.startswith("images/") for n in names) == r["images"], names
    assert sum(n.startswith("tokens/") for n in names) == r["images"], names
    assert f"distill/unit-{r['unit']:06d}.h5" in names and f"metrics/unit-{r['unit']:06d}.jsonl" in names, names
    for name, size, crc in r["files"]:
        data = open(f"{out}/{name}", "rb").read()
        assert len(data) == size and f"{zlib.crc32(data):08x}" == crc, (name, size, crc)
print("ok: file lists")
PY
"$vispec" verify "$a" > "$work/v.log" || { cat "$work/v.log"; fail "verify of an intact run"; }
grep -q "5 units journaled, 46 files checked, 0 broken unit(s)" "$work/v.log" || { cat "$work/v.log"; fail "verify counts"; }

# 2. A distillation unit file truncated after the run: distill-index and the trainer refuse it, naming it;
#    the rerun recomputes that unit only.
: > "$a/distill/unit-000003.h5"
expect_fail 2 "unit-000003.h5: 0 bytes, journaled" "$work/idx.log" "$vispec" distill-index "$a"
expect_fail 2 "unit-000003.h5: 0 bytes, journaled" "$work/train.log" \
  "$vispec" train eagle-head --config "$src/configs/fmnist.yaml" --data "$a" --out "$work/head" --steps 2 --threads 1
"$vispec" run "$work/a/job.yaml" 2> "$work/r1.log" || { cat "$work/r1.log"; fail "rerun after a truncation"; }
grep -q "unit 3: .*unit-000003.h5: 0 bytes, journaled .*; recomputing it" "$work/r1.log" || { cat "$work/r1.log"; fail "rerun warning"; }
grep -q "(4 done before" "$work/r1.log" || { cat "$work/r1.log"; fail "the rerun should recompute one unit"; }
same_outputs "$work/ref/out" "$a" && same_distill "$work/ref/out" "$a" || fail "after the truncation"

# 3. A deleted distillation file, PNG and unit metrics file (units 0, 1, 2): the rerun recomputes those three.
rm "$a/distill/unit-000000.h5" "$a/images/00000004.png" "$a/metrics/unit-000002.jsonl"
"${MPIRUN[@]}" -np 2 "$vispec" run "$work/a/job.yaml" 2> "$work/r2.log" || { cat "$work/r2.log"; fail "rerun after deletions"; }
grep -q "(2 done before" "$work/r2.log" || { cat "$work/r2.log"; fail "the rerun should recompute three units"; }
same_outputs "$work/ref/out" "$a" && same_distill "$work/ref/out" "$a" || fail "after the deletions"

# 4. A flipped byte (same size) in a token file of unit 2: only reading finds it. verify names it (exit 6);
#    --repair un-journals unit 2 and rebuilds the index; the rerun recomputes it.
"$py" -c "import sys; p=sys.argv[1]; b=bytearray(open(p,'rb').read()); b[-1]^=1; open(p,'wb').write(b)" "$a/tokens/00000009.npy"
expect_fail 6 "unit 2: .*tokens/00000009.npy: CRC-32 .*, journaled" "$work/v2.log" "$vispec" verify "$a"
runs_before=$("$py" -c "import json,sys; print(json.dumps(json.load(open(sys.argv[1]))['runs']))" "$a/summary.json")
"$vispec" verify "$a" --repair > "$work/v3.log" || { cat "$work/v3.log"; fail "verify --repair"; }
grep -q "repaired: 1 unit(s) un-journaled" "$work/v3.log" || { cat "$work/v3.log"; fail "repair message"; }
"$py" - "$a" "$runs_before" <<'PY' || fail "state after the repair"
import json, os, sys, h5py
out, runs_before = sys.argv[1], json.loads(sys.argv[2])
assert sorted(json.loads(l)["unit"] for l in list(open(f"{out}/journal.jsonl"))[1:]) == [0, 1, 3, 4]
assert not os.path.exists(f"{out}/distill/unit-000002.h5") and not os.path.exists(f"{out}/metrics.jsonl")
# The summary keeps its runs history and says what the journal holds now; its other totals wait for the rerun.
s = json.load(open(f"{out}/summary.json"))
assert s["runs"] == runs_before and s["images"] == 14 and s["units_done"] == 4 and not s["complete"], s
assert "metrics" not in s and "mean_accepted_length" not in s, s
with h5py.File(f"{out}/distill/index.h5", "r") as f:
    assert list(f["units/unit"][()]) == [0, 1, 3, 4]
PY
"$vispec" run "$work/a/job.yaml" 2> "$work/r3.log" || { cat "$work/r3.log"; fail "rerun after the repair"; }
grep -q "(4 done before" "$work/r3.log" || { cat "$work/r3.log"; fail "the rerun should recompute one unit"; }
"$py" -c "import json,sys; r=json.load(open(sys.argv[1]))['runs']; assert r[:-1] == json.loads(sys.argv[2]) and r[-1]['images'] == 4, r" \
  "$a/summary.json" "$runs_before" || fail "the rerun after the repair lost the runs before it"
same_outputs "$work/ref/out" "$a" && same_distill "$work/ref/out" "$a" || fail "after the repair"
"$vispec" verify "$a" > /dev/null || fail "verify after the rerun"
echo "ok: journaled outputs are checked, verified and repaired"

# 5. What a user reads besides the unit files, against the journal: a metrics.jsonl short of a line, a
#    summary.json of other totals, an index mapping a file that is no journaled unit's. verify names each
#    (exit 6); the trainers refuse the index; the rerun after --repair rebuilds them.
cp "$a/metrics.jsonl" "$work/metrics.bak" && cp "$a/summary.json" "$work/summary.bak"
sed -i '3d' "$a/metrics.jsonl"
expect_fail 6 "metrics.jsonl: .* bytes, CRC-32 .*; the journaled units' metrics make" "$work/v5.log" "$vispec" verify "$a"
cp "$work/metrics.bak" "$a/metrics.jsonl"
"$py" -c "import json, sys; p=sys.argv[1]; s=json.load(open(p)); s['images'] -= 1; json.dump(s, open(p, 'w'))" "$a/summary.json"
expect_fail 6 "summary.json: 17 images in 5 units; the journal holds 18 in 5" "$work/v6.log" "$vispec" verify "$a"
cp "$work/summary.bak" "$a/summary.json"
(cd / && "$py" - "$a/distill/index.h5" <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], "r+") as f:
    shape, dtype = f["tokens"].shape, f["tokens"].dtype
    del f["tokens"]
    layout = h5py.VirtualLayout(shape=shape, dtype=dtype)
    layout[0:4] = h5py.VirtualSource("other.h5", "tokens", shape=(4,) + shape[1:])
    f.create_virtual_dataset("tokens", layout, fillvalue=-1)
PY
) || fail "rewriting the index"
expect_fail 6 "index.h5: dataset 'tokens' maps 'other.h5', which is not a journaled unit file" "$work/v7.log" \
  "$vispec" verify "$a"
expect_fail 2 "maps 'other.h5'" "$work/train2.log" \
  "$vispec" train eagle-head --config "$src/configs/fmnist.yaml" --data "$a" --out "$work/head2" --steps 2 --threads 1
"$vispec" verify "$a" --repair > "$work/v8.log" || { cat "$work/v8.log"; fail "verify --repair of the index"; }
"$vispec" run "$work/a/job.yaml" 2> "$work/r4.log" || { cat "$work/r4.log"; fail "rerun after the index repair"; }
same_outputs "$work/ref/out" "$a" && same_distill "$work/ref/out" "$a" || fail "after the index repair"
"$vispec" verify "$a" > /dev/null || fail "verify after the rebuild"
echo "ok: metrics.jsonl, summary.json and index.h5 are verified against the journal"
