#!/usr/bin/env bash
# Real mpirun, 1 to 4 ranks, dynamic and static schedules: every run writes byte-identical images and tokens,
# the same metrics and a complete journal, equal to a run without mpirun. The weights are read once per node
# (read_weights: once_per_node): rank 0 reads the files, ranks 1..N-1 read nothing and receive them; with
# every_rank (the default) each reads its own, same outputs. A drafter's weights travel the same way.
set -euo pipefail
vispec=$1 src=$2
source "$src/tests/mpi_common.sh"  # sets $py and a $work directory removed at exit

# weights_read SUMMARY MODE: which ranks read weight files (summary.json's per-rank figures).
weights_read() {
  "$py" - "$1" "$2" <<'PY' || exit 1
import json, sys
summary, mode = json.load(open(sys.argv[1])), sys.argv[2]
ranks = summary["per_rank"]
read = [r["weights_read_mb"] for r in ranks]
received = [r["weights_received_mb"] for r in ranks]
assert summary["read_weights"] == mode, summary["read_weights"]
assert read[0] > 5, f"rank 0 read {read[0]} MB of weights"  # the embedded GPT and VQ: 8.6 MB
if mode == "once_per_node":
    assert all(r == 0 for r in read[1:]), f"ranks 1.. read weight files: {read}"
    assert all(abs(r - read[0]) < 1e-6 for r in received[1:]), f"received {received}, rank 0 read {read[0]}"
else:
    assert all(abs(r - read[0]) < 1e-6 for r in read) and not any(received), (read, received)
# Every rank's device and its model, and rank 0's log names each one.
assert all(r["device"] == "cpu" and r["device_model"].startswith("cpu") for r in ranks), ranks
PY
}
# ranks_logged LOG NP: rank 0's log has one "rank R decodes on" line per rank.
ranks_logged() {
  for r in $(seq 0 $(($2 - 1))); do
    grep -q "rank $r decodes on cpu (cpu" "$1" || { cat "$1"; echo "FAIL: no device line for rank $r"; exit 1; }
  done
}

write_job "$work/ref"
"$vispec" run "$work/ref/job.yaml" 2> "$work/ref.log"
for np in 1 2 3 4; do
  for schedule in dynamic static; do
    d="$work/np$np-$schedule"
    write_job "$d"
    "${MPIRUN[@]}" -np $np "$vispec" run "$d/job.yaml" --set schedule=$schedule --set read_weights=once_per_node \
      2> "$d.log" \
      || { cat "$d.log"; echo "FAIL: mpirun -np $np $schedule"; exit 1; }
    same_outputs "$work/ref/out" "$d/out"
    ranks=$("$py" -c "import json,sys; s=json.load(open(sys.argv[1])); print(s['ranks'], sum(r['units'] for r in s['per_rank']))" "$d/out/summary.json")
    [ "$ranks" = "$np 5" ] || { echo "FAIL: summary ranks/units '$ranks' for -np $np"; exit 1; }
    weights_read "$d/out/summary.json" once_per_node
    ranks_logged "$d.log" $np
    echo "ok: -np $np $schedule identical to the single-process run; weights read by rank 0 only"
  done
done

# every_rank, the default: each rank reads the files; same outputs.
d="$work/every-rank"
write_job "$d"
"${MPIRUN[@]}" -np 3 "$vispec" run "$d/job.yaml" 2> "$d.log" || { cat "$d.log"; fail "mpirun -np 3 (every_rank)"; }
same_outputs "$work/ref/out" "$d/out"
weights_read "$d/out/summary.json" every_rank
echo "ok: -np 3 read_weights=every_rank identical; every rank read the weights"

# SD's draft GPT is shared like the target: 2 ranks give the single process's tokens.
for np in 0 2; do
  d="$work/sd-np$np"
  write_job "$d"
  launch=(); [ $np = 0 ] || launch=("${MPIRUN[@]}" -np $np)
  "${launch[@]}" "$vispec" run "$d/job.yaml" --set decoder.name=sd --set read_weights=once_per_node 2> "$d.log" \
    || { cat "$d.log"; fail "sd -np $np"; }
done
diff -r "$work/sd-np0/out/tokens" "$work/sd-np2/out/tokens" > /dev/null || fail "sd: 2 ranks' tokens differ"
weights_read "$work/sd-np2/out/summary.json" once_per_node
echo "ok: sd at -np 2 (the draft GPT received by rank 1) gives the single process's tokens"
