#!/usr/bin/env bash
# Data-parallel training under real mpirun (train/data_parallel.h). The same global batch and seed give the
# same loss curve alone and at -np 2 and 4 (train gpt, train vq, train eagle-head; the draft and MuLo-SD GPTs
# alone and at -np 2), also when a run killed under -np 2 resumes under -np 4; every other trainer runs under
# -np 2 and exports its weights; a rank that fails mid-training ends the job with one line naming it.
#   bash tests/mpi_train.sh build/vispec .
set -euo pipefail
vispec=$(realpath "$1")
src=$(realpath "$2")
source "$(dirname "$0")/mpi_common.sh"
export OMP_NUM_THREADS=1
config=$src/configs/fmnist.yaml

train() {  # train LOG RANKS ARGS...: RANKS 1 runs without mpirun
  local log=$1 n=$2
  shift 2
  if [ "$n" = 1 ]; then
    "$vispec" train "$@" > "$log" 2>&1
  else
    "${MPIRUN[@]}" -np "$n" ${VISPEC_FAULT:+-x VISPEC_FAULT} "$vispec" train "$@" > "$log" 2>&1
  fi
}

# same_curve A B [TOL]: equal steps, losses (and extra figures) within TOL relative, final weights close.
same_curve() {
  "$py" - "$1" "$2" "${3:-1e-5}" <<'PY'
import json, re, sys, struct, numpy as np
a, b, tol = sys.argv[1], sys.argv[2], float(sys.argv[3])
def steps(d):
    rows = [json.loads(l) for l in open(f"{d}/log.jsonl")]
    for r in rows:  # a training record says how fast it goes and when it will end
        assert "loss" not in r or (r["samples_per_s"] > 0 and re.fullmatch(r"\d+:\d\d:\d\d", r["eta"])), r
    return {r["step"]: r for r in rows if "loss" in r}
sa, sb = steps(a), steps(b)
assert sorted(sa) == sorted(sb), f"{a} and {b} log different steps: {sorted(sa)} / {sorted(sb)}"
worst = 0.0
for s in sa:
    for k, v in sa[s].items():
        if k in ("step", "elapsed_s", "samples_per_s", "eta", "ranks", "lr"):
            continue
        worst = max(worst, abs(v - sb[s][k]) / max(abs(v), 1e-8))
def weights(d):
    raw = open(f"{d}/model.safetensors", "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    head = json.loads(raw[8:8 + n])
    return {k: np.frombuffer(raw[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]], np.float32)
            for k, v in head.items() if k != "__metadata__" and v["dtype"] == "F32"}
wa, wb = weights(a), weights(b)
wdiff = max(float(np.abs(wa[k] - wb[k]).max()) for k in wa)
print(f"{a} vs {b}: {len(sa)} steps, largest relative loss difference {worst:.2e}, weights {wdiff:.2e}")
assert worst < tol, f"loss curves differ by {worst} (> {tol})"
assert wdiff < 5e-4, f"weights differ by {wdiff}"
PY
}

# A small distillation run of the embedded model: the head trainers' data, and its token grids the GPT's
# training set (scripts/gpt_token_cache.py: tokenising Fashion-MNIST's 70,000 images would take minutes).
write_job "$work/distill"
printf 'distill: {streams: cond+uncond, dtype: fp32}\n' >> "$work/distill/job.yaml"
(cd "$work/distill" && "$vispec" run job.yaml > run.log 2>&1) || { cat "$work/distill/run.log"; fail "distillation run"; }
mkdir -p "$work/gpt_data"
"$py" "$src/scripts/gpt_token_cache.py" "$work/distill/out" "$work/gpt_data/tokens.safetensors"

# 1. train gpt and train vq: -np 1, 2, 4.
gpt=(gpt --config "$config" --threads 1 --seed 3 --steps 6 --batch-size 8 --log-every 1 --checkpoint-every 3 --warmup 2)
mkdir -p "$work/gpt1" && cp "$work/gpt_data/tokens.safetensors" "$work/gpt1/"
train "$work/gpt1.log" 1 "${gpt[@]}" --out "$work/gpt1" || { cat "$work/gpt1.log"; fail "train gpt alone"; }
for n in 2 4; do
  mkdir -p "$work/gpt$n" && cp "$work/gpt_data/tokens.safetensors" "$work/gpt$n/"
  train "$work/gpt$n.log" $n "${gpt[@]}" --out "$work/gpt$n" || { cat "$work/gpt$n.log"; fail "train gpt -np $n"; }
  grep -q '"ranks":'$n "$work/gpt$n/log.jsonl" || fail "gpt -np $n: the log does not say $n ranks"
  same_curve "$work/gpt1" "$work/gpt$n" || fail "train gpt: -np $n's curve is not -np 1's"
done
# Killed as step 4 starts under -np 2 (the checkpoint of step 3 is on disk), resumed under -np 4.
mkdir -p "$work/gptr" && cp "$work/gpt_data/tokens.safetensors" "$work/gptr/"
if VISPEC_FAULT=kill-at-step@3 train "$work/gptr_a.log" 2 "${gpt[@]}" --out "$work/gptr"; then fail "the killed run exited 0"; fi
train "$work/gptr_b.log" 4 "${gpt[@]}" --out "$work/gptr" || { cat "$work/gptr_b.log"; fail "resume under -np 4"; }
grep -q "resumed .* at step 3" "$work/gptr_b.log" || { cat "$work/gptr_b.log"; fail "the -np 4 run did not resume at step 3"; }
same_curve "$work/gpt1" "$work/gptr" || fail "train gpt: the run resumed at another rank count differs"

# The same trainer's other two models, SD's draft GPT (--drafter) and MuLo-SD's half-resolution GPT (--mulo, on
# the 8x8 corners of the grids): the same curve at -np 1 and 2.
"$py" "$src/scripts/gpt_token_cache.py" "$work/distill/out" "$work/gpt_data/tokens8.safetensors" --crop 8
for kind in drafter mulo; do
  cache=tokens.safetensors
  [ $kind = drafter ] || cache=tokens8.safetensors
  for n in 1 2; do
    mkdir -p "$work/$kind$n" && cp "$work/gpt_data/$cache" "$work/$kind$n/tokens.safetensors"
    train "$work/$kind$n.log" $n "${gpt[@]}" --$kind --out "$work/$kind$n" \
      || { cat "$work/$kind$n.log"; fail "train gpt --$kind -np $n"; }
  done
  "$py" - "$work/${kind}2/model.safetensors" $kind <<'PY' || fail "train gpt --$kind: the export is not that model"
import json, struct, sys
raw = open(sys.argv[1], "rb").read()
meta = json.loads(raw[8:8 + struct.unpack("<Q", raw[:8])[0]])["__metadata__"]
want = {"drafter": "draft_gpt", "mulo": "mulo_gpt"}[sys.argv[2]]
assert meta["kind"] == want, f"{sys.argv[1]}: kind {meta['kind']}, not {want}"
PY
  same_curve "$work/${kind}1" "$work/${kind}2" || fail "train gpt --$kind: curves differ"
done

vq=(vq --config "$config" --threads 1 --seed 3 --steps 4 --batch-size 6 --log-every 1 --checkpoint-every 4 --warmup 1
    --eval-images 64)  # the default 2,000 take half a minute per run on one thread
for n in 1 2 4; do
  train "$work/vq$n.log" $n "${vq[@]}" --out "$work/vq$n" || { cat "$work/vq$n.log"; fail "train vq -np $n"; }
done
same_curve "$work/vq1" "$work/vq2" && same_curve "$work/vq1" "$work/vq4" || fail "train vq: curves differ"

# 2. The head trainers on it: eagle-head's curve at -np 1 and 2 (the target read once per node), ssd-heads
# under -np 2.
heads=(--config "$config" --data "$work/distill/out" --threads 1 --seed 3 --steps 4 --batch-size 4 --log-every 1
       --checkpoint-every 4 --warmup 1 --heldout-units 1 --heldout-rows 4 --window-rows 8)
for n in 1 2; do
  train "$work/eagle$n.log" $n eagle-head "${heads[@]}" --read-weights once_per_node --out "$work/eagle$n" || { cat "$work/eagle$n.log"; fail "eagle-head -np $n"; }
done
same_curve "$work/eagle1" "$work/eagle2" || fail "train eagle-head: curves differ"
train "$work/ssd.log" 2 ssd-heads "${heads[@]}" --out "$work/ssd" || { cat "$work/ssd.log"; fail "ssd-heads -np 2"; }

# 3. The trainers whose curves are not compared run under -np 2 and export their weights: the classifier
# (BatchNorm statistics are per rank) and MuLo-SD's resamplers (their token caches are made by rank 0).
small=(--config "$config" --threads 1 --seed 3 --steps 2 --batch-size 4 --log-every 1 --checkpoint-every 2 --warmup 1)
train "$work/cls.log" 2 classifier "${small[@]}" --out "$work/cls" || { cat "$work/cls.log"; fail "classifier -np 2"; }
train "$work/mulo.log" 2 mulo-resamplers "${small[@]}" --max-images 64 --out "$work/mulo" \
  || { cat "$work/mulo.log"; fail "mulo-resamplers -np 2"; }
for d in ssd cls mulo; do
  [ -s "$work/$d/model.safetensors" ] || fail "$d: no exported weights"
  grep -q '"ranks":2' "$work/$d/log.jsonl" || fail "$d: the log does not say 2 ranks"
done

# scripts/loss_curve.py reads every trainer's log: the trainer named, its loss said, its held-out measures in
# the table's columns, a plot where gnuplot is installed.
for spec in "gpt1:GPT:cross-entropy:test_loss" "vq1:VQ:reconstruction MSE:test_mse" \
            "eagle1:EAGLE head:SmoothL1:heldout_vloss" "ssd:SSD heads:SmoothL1:_accept" \
            "cls:classifier:cross-entropy:test_accuracy" "mulo:MuLo-SD resamplers:MSE:test_up_mse"; do
  IFS=: read -r d trainer objective column <<< "$spec"
  "$py" "$src/scripts/loss_curve.py" "$work/$d/log.jsonl" "$work/curve-$d" > "$work/curve-$d.out" 2>&1 ||
    { cat "$work/curve-$d.out"; fail "loss_curve.py on $d's log"; }
  grep -q "^$trainer (train .*loss = .*$objective" "$work/curve-$d.out" || { cat "$work/curve-$d.out"; fail "loss_curve.py: $d's trainer"; }
  head -1 "$work/curve-$d.tsv" | grep -q "^step.train_loss.*$column" || { head -2 "$work/curve-$d.tsv"; fail "loss_curve.py: $d's columns"; }
  [ "$(wc -l < "$work/curve-$d.tsv")" -ge 3 ] || fail "loss_curve.py: $d's table is empty"
  if command -v gnuplot > /dev/null; then [ -s "$work/curve-$d.png" ] || fail "loss_curve.py: no plot of $d"; fi
done
echo "ok: loss_curve.py reads the log of every trainer"

# 4. Rank 1 fails at step 2 (MPMD launch: the fault in rank 1's environment only): every rank ends, exit 3,
# one line naming rank 1.
set +e
timeout 120 "${MPIRUN[@]}" -np 1 "$vispec" train "${vq[@]}" --out "$work/fail" : \
  -np 1 env VISPEC_FAULT=train-error@2 "$vispec" train "${vq[@]}" --out "$work/fail" > "$work/fail.log" 2>&1
rc=$?
set -e
[ $rc -eq 3 ] || { cat "$work/fail.log"; fail "a failing rank: exit $rc, expected 3"; }
[ "$(grep -c '^vispec: error: rank 1: internal error: injected training failure' "$work/fail.log")" = 1 ] \
  || { cat "$work/fail.log"; fail "a failing rank: expected one line naming rank 1"; }
echo "PASS: data-parallel training (gpt, vq, eagle-head curves at 1/2/4 ranks, the draft and MuLo-SD GPTs at 1/2; resume at another rank count; every trainer under -np 2; a failing rank)"
