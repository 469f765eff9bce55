#!/usr/bin/env bash
# Reads that fail and locks that do not exist, injected with tests/preload/io_faults.c (LD_PRELOAD): an EIO
# while reading the journal, the units' metrics (when metrics.jsonl is assembled), the distillation index, a
# trainer's checkpoint or a journaled image is an error naming the file, never fewer lines, a torn line or a
# damaged file; on a file system without locks (NFS without a lock manager) a distillation job runs, with
# one warning for its output lock.
set -euo pipefail
vispec=$1 src=$2 preload=$3
source "$src/tests/mpi_common.sh"  # sets $py and a $work directory removed at exit

# expect_eio WHAT TEXT COMMAND...: COMMAND, reading files whose path holds TEXT with EIO, exits non-zero with
# one error line naming such a file and "Input/output error".
expect_eio() {
  local what=$1 text=$2 status=0
  shift 2
  LD_PRELOAD=$preload VISPEC_TEST_EIO=$text "$@" > "$work/eio.log" 2>&1 || status=$?
  [ $status -ne 0 ] || { cat "$work/eio.log"; fail "$what: exit 0 with unreadable $text"; }
  [ "$(grep -c 'vispec: error' "$work/eio.log")" -eq 1 ] || { cat "$work/eio.log"; fail "$what: not one error line"; }
  grep 'vispec: error' "$work/eio.log" | grep -q "$text.*Input/output error" \
    || { cat "$work/eio.log"; fail "$what: the line does not name $text and the I/O error"; }
  echo "ok: $what: $(grep 'vispec: error' "$work/eio.log")"
}

d="$work/job"
write_job "$d"
printf 'distill: {streams: cond, dtype: bf16}\n' >> "$d/job.yaml"

# 1. No locks anywhere: the job runs (HDF5's own locking is off for vispec's files), one warning for OUT's lock.
LD_PRELOAD=$preload VISPEC_TEST_NOLOCK=1 "$vispec" run "$d/job.yaml" > "$work/nolock.log" 2>&1 \
  || { cat "$work/nolock.log"; fail "a distillation job without file locks"; }
grep -q "does not support flock" "$work/nolock.log" || { cat "$work/nolock.log"; fail "no warning for the lock"; }
(cd / && "$py" -c "import h5py, sys; f = h5py.File(sys.argv[1] + '/distill/index.h5', 'r'); assert f['hidden'].shape[0] == 18" "$d/out") \
  || fail "index.h5 of the job without locks"
echo "ok: without file locks a distillation job completes, warning once"

# 2. EIO on the files a rerun, its end and the other commands read.
expect_eio "the journal on a rerun" journal.jsonl "$vispec" run "$d/job.yaml"
rm "$d/out/metrics.jsonl"
expect_eio "a unit's metrics while metrics.jsonl is assembled" metrics/unit-000002 "$vispec" run "$d/job.yaml"
[ ! -f "$d/out/metrics.jsonl" ] || fail "metrics.jsonl written without unit 2's lines"
"$vispec" run "$d/job.yaml" > /dev/null 2>&1 || fail "the rerun without faults"
[ "$(wc -l < "$d/out/metrics.jsonl")" -eq 18 ] || fail "metrics.jsonl after the rerun"
expect_eio "verify of a journaled image" images/00000005.png "$vispec" verify "$d/out"
expect_eio "distill-index reading the first unit file (its shapes)" distill/unit-000000.h5 "$vispec" distill-index "$d/out"
expect_eio "a trainer reading the distillation index" distill/index.h5 \
  "$vispec" train eagle-head --config "$src/configs/fmnist.yaml" --data "$d/out" --out "$work/head" --steps 2 \
  --batch-size 4 --threads 1 --null-fraction 0
"$vispec" train eagle-head --config "$src/configs/fmnist.yaml" --data "$d/out" --out "$work/head" --steps 2 \
  --batch-size 4 --threads 1 --null-fraction 0 --checkpoint-every 2 > "$work/train.log" 2>&1 || { cat "$work/train.log"; fail "training"; }
expect_eio "a trainer resuming its checkpoint" checkpoints/step-00000002/state.json \
  "$vispec" train eagle-head --config "$src/configs/fmnist.yaml" --data "$d/out" --out "$work/head" --steps 4 \
  --batch-size 4 --threads 1 --null-fraction 0 --checkpoint-every 2

# 3. Weights are read through a mapping, where an unreadable page raises SIGBUS instead of returning EIO: one
# line naming the weight file, a non-zero exit, no image; under mpirun -np 2 both ranks end, none hangs.
write_job "$work/mapped"
expect_eio "loading mapped weights" gpt.safetensors "$vispec" run "$work/mapped/job.yaml"
[ -z "$(ls "$work/mapped/out/images" 2>/dev/null)" ] || fail "images written after the weights failed to load"
status=0
timeout 120 "${MPIRUN[@]}" -np 2 -x LD_PRELOAD="$preload" -x VISPEC_TEST_EIO=gpt.safetensors \
  "$vispec" run "$work/mapped/job.yaml" > "$work/mapped.log" 2>&1 || status=$?
[ $status -ne 0 ] && [ $status -ne 124 ] || { cat "$work/mapped.log"; fail "mpirun -np 2 with unreadable weights: exit $status"; }
grep 'vispec: error' "$work/mapped.log" | grep -q "gpt.safetensors.*Input/output error" \
  || { cat "$work/mapped.log"; fail "mpirun -np 2: no line naming the weights"; }
! grep 'vispec: error' "$work/mapped.log" | grep -vq "gpt.safetensors" || { cat "$work/mapped.log"; fail "mpirun -np 2: other errors"; }
echo "ok: mpirun -np 2 with unreadable mapped weights exits $status, naming the file"
