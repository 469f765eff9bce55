#!/usr/bin/env bash
# Distillation files under real mpirun, read back by Debian's python3-h5py: documented shapes and dtypes, the
# index's virtual datasets equal the unit files, hidden states line up with the tokens they predict (greedy,
# fp32: the target's own head applied to hidden[t] picks tokens[t]), and a writer killed mid-unit leaves
# nothing the index includes; distill-index covers exactly the journaled units and the rerun completes.
set -euo pipefail
vispec=$1 src=$2
source "$src/tests/mpi_common.sh"  # sets $py and a $work directory removed at exit

# 1. bf16, both streams, 2 ranks.
write_job "$work/a"
printf 'distill: {streams: cond+uncond, dtype: bf16}\n' >> "$work/a/job.yaml"
"${MPIRUN[@]}" -np 2 "$vispec" run "$work/a/job.yaml" 2> "$work/a.log" || { cat "$work/a.log"; fail "distill run"; }
(cd / && "$py" - "$work/a/out" <<'PY'
import glob, json, sys
import h5py, numpy as np
out = sys.argv[1]
units = sorted(glob.glob(f"{out}/distill/unit-*.h5"))
assert len(units) == 5, units
rows = {"hidden": [], "tokens": [], "class_id": [], "sample_id": []}
for path in units:
    with h5py.File(path, "r") as f:
        assert f.attrs["schema"] == "vispec-distill" and f.attrs["version"] == 1
        assert f.attrs["dtype"] == "bf16" and f.attrs["streams"] == "cond,uncond"
        n = f.attrs["samples"]
        h = f["hidden"]
        assert h.shape == (n, 2, 256, 128) and h.dtype == np.uint16 and h.attrs["dtype"] == "bfloat16", (h.shape, h.dtype)
        assert 10 * 1024 <= np.prod(h.chunks) * 2 <= 1 << 20, h.chunks
        assert f["tokens"].shape == (n, 256) and f["tokens"].dtype == np.int32
        for k in rows:
            rows[k].append(f[k][()])
        for sid, tok in zip(f["sample_id"][()], f["tokens"][()]):
            assert (np.load(f"{out}/tokens/{sid:08d}.npy").reshape(-1) == tok).all(), sid
with h5py.File(f"{out}/distill/index.h5", "r") as f:
    assert f["hidden"].is_virtual and f["hidden"].shape == (18, 2, 256, 128)
    for k in rows:
        assert (f[k][()] == np.concatenate(rows[k])).all(), k
    assert list(f["units/unit"][()]) == [0, 1, 2, 3, 4]
    assert list(f["units/offset"][()]) == [0, 4, 8, 12, 16] and list(f["units/length"][()]) == [4, 4, 4, 4, 2]
    assert list(f["sample_id"][()]) == list(range(18))
    h = (f["hidden"][()].astype(np.uint32) << 16).view(np.float32)  # bf16 bits -> float32
    assert np.isfinite(h).all() and np.abs(h).max() > 0.1
    assert not np.allclose(h[:, 0], h[:, 1]), "cond and uncond streams are identical"
print("ok: bf16 unit files and index read back by h5py")
PY
) || fail "h5py checks (bf16)"
"$vispec" inspect "$work/a/out/distill/index.h5" | grep -q "hidden \[18, 2, 256, 128\] uint16 (holds bfloat16 bits) virtual over 5 unit files" \
  || { "$vispec" inspect "$work/a/out/distill/index.h5"; fail "inspect"; }

# 2. fp32, greedy, no CFG: the target's final norm and head on hidden[t] choose tokens[t].
write_job "$work/g"
sed -i 's/decoder: .*/decoder: {name: ar, cfg_scale: 1.0, temperature: 0}/' "$work/g/job.yaml"
printf 'distill: {dtype: fp32, compression: 4}\n' >> "$work/g/job.yaml"
"$vispec" run "$work/g/job.yaml" 2> "$work/g.log" || { cat "$work/g.log"; fail "greedy distill run"; }
"$py" - "$work/g/out" "$src/configs/fmnist/gpt.safetensors" <<'PY'
import json, struct, sys
import h5py, numpy as np
out, weights = sys.argv[1:3]
raw = open(weights, "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
header = json.loads(raw[8:8 + n])
def tensor(name):
    m = header[name]
    a, b = m["data_offsets"]
    assert m["dtype"] == "F32"
    return np.frombuffer(raw[8 + n + a: 8 + n + b], dtype=np.float32).reshape(m["shape"])
norm_w, head = tensor("norm.weight"), tensor("output.weight")
with h5py.File(f"{out}/distill/index.h5", "r") as f:
    h = f["hidden"][:, 0].astype(np.float64)  # [N, T, D]
    tokens = f["tokens"][()]
    assert f["hidden"].dtype == np.float32
x = h / np.sqrt((h * h).mean(-1, keepdims=True) + 1e-5) * norm_w
agree = ((x @ head.T.astype(np.float64)).argmax(-1) == tokens).mean()
assert agree > 0.999, agree
print(f"ok: greedy tokens = argmax of the head on the stored hidden states ({agree:.5f})")
PY

# 3. fp16 is IEEE half for h5py.
write_job "$work/h"
printf 'distill: {dtype: fp16}\n' >> "$work/h/job.yaml"
"$vispec" run "$work/h/job.yaml" --set images_per_prompt=1 2> "$work/h.log" || { cat "$work/h.log"; fail "fp16 run"; }
"$py" -c "
import h5py, numpy as np, sys
f = h5py.File(sys.argv[1], 'r'); h = f['hidden']
assert h.dtype == np.float16 and h.shape == (6, 1, 256, 128) and np.isfinite(h[()]).all() and np.abs(h[()]).max() > 0.1
" "$work/h/out/distill/index.h5" || fail "fp16 read back"

# 4. Killed mid-unit: nothing of unit 2 is indexed; distill-index covers units 0-1; the rerun completes.
write_job "$work/k"
printf 'distill: {streams: cond, dtype: bf16}\n' >> "$work/k/job.yaml"
status=0; VISPEC_FAULT=kill-mid-unit@2 "$vispec" run "$work/k/job.yaml" 2> "$work/k.log" || status=$?
[ $status -eq 137 ] || fail "expected SIGKILL, got $status"
[ ! -e "$work/k/out/distill/unit-000002.h5" ] || fail "a unit file of a killed unit was renamed into place"
"$vispec" distill-index "$work/k/out" > "$work/k.index.txt"
"$py" -c "
import h5py, sys
f = h5py.File(sys.argv[1], 'r')
assert list(f['units/unit'][()]) == [0, 1] and f['hidden'].shape[0] == 8 and list(f['sample_id'][()]) == list(range(8))
" "$work/k/out/distill/index.h5" || fail "partial index"
"$vispec" run "$work/k/job.yaml" 2> "$work/k.rerun.log" || { cat "$work/k.rerun.log"; fail "rerun"; }
ls "$work/k/out/distill" | grep -q tmp && fail "temporary distillation files left"
"$py" -c "
import h5py, sys
f = h5py.File(sys.argv[1], 'r')
assert list(f['units/unit'][()]) == [0, 1, 2, 3, 4] and list(f['sample_id'][()]) == list(range(18))
" "$work/k/out/distill/index.h5" || fail "index after resume"
echo "ok: killed writer leaves nothing indexed; distill-index covers the journaled units; rerun completes"

# 5. A unit file gone (moved, deleted): plain h5py reading index.h5 sees values no data can hold in its rows,
# not zeros (bf16 states NaN's bits, float states NaN, tokens and ids -1); the other rows are intact.
cp -r "$work/a/out" "$work/gone"
rm "$work/gone/distill/unit-000001.h5"
cp -r "$work/h/out" "$work/gone16"
rm "$work/gone16/distill/unit-000000.h5"
(cd / && "$py" - "$work/gone" "$work/a/out" "$work/gone16" <<'PY'
import sys
import h5py, numpy as np
gone, whole, gone16 = sys.argv[1:4]
with h5py.File(f"{gone}/distill/index.h5", "r") as f, h5py.File(f"{whole}/distill/index.h5", "r") as w:
    rows = slice(4, 8)  # unit 1
    assert (f["hidden"][rows] == 0x7FC0).all(), "bf16 rows of a missing unit are not NaN"
    for k in ("tokens", "sample_id", "class_id"):
        assert (f[k][rows] == -1).all(), k
    for k in ("hidden", "tokens", "sample_id", "class_id"):
        assert (f[k][:4] == w[k][:4]).all() and (f[k][8:] == w[k][8:]).all(), k
with h5py.File(f"{gone16}/distill/index.h5", "r") as f:
    assert np.isnan(f["hidden"][:4]).all() and np.isfinite(f["hidden"][4:]).all()
print("ok: a missing unit file's rows read as NaN and -1 through plain h5py")
PY
) || fail "fill values of a missing unit"
