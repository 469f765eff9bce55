#!/usr/bin/env bash
# A real full disk during distillation under 2 ranks: a small tmpfs is mounted for the test (skipped, visibly,
# where mounting is not allowed). The job ends with one line saying the disk is full and exit 2 on every rank,
# with no segfault in HDF5's close and no core dump; once space is freed, the rerun completes and its outputs
# equal a run on a roomy disk, byte for byte.
set -euo pipefail
vispec=$1 src=$2
source "$src/tests/mpi_common.sh"  # sets $py and a $work directory removed at exit

mnt=$work/full
mkdir -p "$mnt"
if ! mount -t tmpfs -o size=2500k tmpfs "$mnt" 2> /dev/null; then
  echo "SKIP: cannot mount a tmpfs here (the test needs root or CAP_SYS_ADMIN to make a full disk)"
  exit 77
fi
trap 'umount "$mnt" 2> /dev/null; rm -rf "$work"' EXIT

job() {  # job DIR: fp32 hidden states of both streams, 1 MB per unit file
  write_job "$1"
  printf 'distill: {streams: cond+uncond, dtype: fp32}\n' >> "$1/job.yaml"
}
job "$work/ref"
"$vispec" run "$work/ref/job.yaml" 2> "$work/ref.log" || { cat "$work/ref.log"; fail "reference run"; }

job "$mnt/j"
status=0
(cd "$mnt" && "${MPIRUN[@]}" -np 2 "$vispec" run "$mnt/j/job.yaml") > "$work/full.log" 2>&1 || status=$?
[ $status -eq 2 ] || { cat "$work/full.log"; fail "full disk: expected exit 2, got $status"; }
[ "$(grep -c 'vispec: error' "$work/full.log")" -eq 1 ] || { cat "$work/full.log"; fail "full disk: expected one error line"; }
grep 'vispec: error' "$work/full.log" | grep -q "No space left on device" \
  || { cat "$work/full.log"; fail "full disk: the error line does not say the disk is full"; }
! grep -qiE "segmentation|signal 11|core dumped|exited on signal" "$work/full.log" || { cat "$work/full.log"; fail "a rank crashed"; }
! ls "$mnt" | grep -q '^core' || fail "a core dump was written"
grep 'vispec: error' "$work/full.log"

mount -o remount,size=16m "$mnt"
(cd "$mnt" && "${MPIRUN[@]}" -np 2 "$vispec" run "$mnt/j/job.yaml") 2> "$work/rerun.log" || { cat "$work/rerun.log"; fail "rerun after freeing space"; }
same_outputs "$work/ref/out" "$mnt/j/out" || fail "after the full disk"
diff -r "$work/ref/out/distill" "$mnt/j/out/distill" > /dev/null || fail "distillation files differ after the full disk"
echo "ok: full disk -> one line naming it, exit 2, no crash; rerun completes identically"
