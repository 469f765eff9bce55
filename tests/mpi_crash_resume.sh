#!/usr/bin/env bash
# Failures and resume, with real processes: a rank SIGKILLed mid-job (under mpirun), a SIGKILL in the middle of
# a unit's writes, a full disk, SIGTERM and SIGUSR1 (Slurm's warning, forwarded by mpirun), and a rerun with a
# changed configuration. Every rerun must complete with outputs identical to an uninterrupted run, nothing
# duplicated in the journal. Failures are injected with VISPEC_FAULT (core/fault_injection.h).
set -euo pipefail
vispec=$1 src=$2
source "$src/tests/mpi_common.sh"  # sets $py and a $work directory removed at exit
write_job "$work/ref"
"$vispec" run "$work/ref/job.yaml" 2> "$work/ref.log"

# 1. kill -9 of a worker rank: static schedule on 3 ranks gives unit 4 to rank 1, which dies as it starts it.
d="$work/killed-rank"; write_job "$d"
if "${MPIRUN[@]}" -np 3 -x VISPEC_FAULT=kill-at-unit@4 "$vispec" run "$d/job.yaml" --set schedule=static 2> "$d.log"; then
  fail "mpirun succeeded although rank 1 was killed"
fi
done_units=$(journal_units "$d/out")
[ "$done_units" -lt 5 ] || fail "journal complete although unit 4 never ran"
"${MPIRUN[@]}" -np 2 "$vispec" run "$d/job.yaml" 2> "$d.rerun.log" || { cat "$d.rerun.log"; fail "rerun after kill -9"; }
same_outputs "$work/ref/out" "$d/out"
# Progress across ranks is one line naming the slowest and the fastest rank, not a list of every rank.
grep -Eq "images/s  ETA [0-9]+:[0-9]{2}:[0-9]{2}  \| slowest r[01] [0-9.]+/s, fastest r[01] [0-9.]+/s$" "$d.rerun.log" ||
  { cat "$d.rerun.log"; fail "no progress line with the slowest and fastest rank"; }
echo "ok: kill -9 of rank 1 ($done_units of 5 units journaled), rerun on 2 ranks completes identically"

# 2. SIGKILL halfway through the writes of unit 2 (single process): its first images exist, unjournaled.
d="$work/killed-write"; write_job "$d"
status=0; VISPEC_FAULT=kill-mid-unit@2 "$vispec" run "$d/job.yaml" 2> "$d.log" || status=$?
[ $status -eq 137 ] || fail "expected death by SIGKILL (137), got $status"
[ "$(journal_units "$d/out")" -eq 2 ] || fail "expected units 0 and 1 journaled, got $(journal_units "$d/out")"
[ -f "$d/out/images/00000008.png" ] || fail "unit 2's first image should have been written before the kill"
"$vispec" run "$d/job.yaml" 2> "$d.rerun.log" || { cat "$d.rerun.log"; fail "rerun after a kill during writes"; }
grep -q "2 done before" "$d.rerun.log" || fail "rerun did not resume from the journal"
same_outputs "$work/ref/out" "$d/out"
echo "ok: SIGKILL during unit 2's writes, rerun completes identically"

# 3. A full disk while writing unit 1: one line, exit 2, the journal intact; the rerun completes.
d="$work/enospc"; write_job "$d"
status=0; VISPEC_FAULT=enospc@1 "$vispec" run "$d/job.yaml" 2> "$d.log" || status=$?
[ $status -eq 2 ] || { cat "$d.log"; fail "full disk: expected exit 2, got $status"; }
[ "$(grep -c 'vispec: error' "$d.log")" -eq 1 ] || { cat "$d.log"; fail "full disk: expected one error line"; }
grep -q "No space left on device" "$d.log" || fail "full disk: the error line does not say why"
"$py" -c "import json,sys; [json.loads(l) for l in open(sys.argv[1])]" "$d/out/journal.jsonl" || fail "journal unreadable"
"$vispec" run "$d/job.yaml" 2> "$d.rerun.log" || { cat "$d.rerun.log"; fail "rerun after full disk"; }
same_outputs "$work/ref/out" "$d/out"
echo "ok: full disk -> one line, exit 2, journal intact; rerun completes identically"

# 4. SIGTERM (single process) and SIGUSR1 (to mpirun, which forwards it to every rank): exit 4, then resume.
signal_run() {  # signal_run NAME SIGNAL launcher...
  local name=$1 sig=$2; shift 2
  local d="$work/$name"; write_job "$d"
  VISPEC_FAULT=slow@400 "$@" "$vispec" run "$d/job.yaml" 2> "$d.log" &
  local pid=$!
  for _ in $(seq 1 300); do [ "$(journal_units "$d/out")" -ge 1 ] && break; sleep 0.05; done
  kill -s "$sig" $pid
  local status=0; wait $pid || status=$?
  [ $status -eq 4 ] || { cat "$d.log"; fail "$name: expected exit 4 after SIG$sig, got $status"; }
  local units; units=$(journal_units "$d/out")
  [ "$units" -ge 1 ] && [ "$units" -lt 5 ] || fail "$name: $units units journaled; expected an interrupted job"
  grep -q "rerun the same command to resume" "$d.log" || fail "$name: no resume hint"
  "$@" "$vispec" run "$d/job.yaml" 2> "$d.rerun.log" || { cat "$d.rerun.log"; fail "$name: rerun"; }
  same_outputs "$work/ref/out" "$d/out"
  echo "ok: SIG$sig stops with exit 4 after $units units; rerun completes identically"
}
signal_run sigterm TERM env
signal_run sigusr1-mpirun USR1 "${MPIRUN[@]}" -np 2 -x VISPEC_FAULT

# 5. Config drift: the finished output directory refuses a different seed, with one line; --new starts over.
d="$work/ref"
before=$(md5sum < "$d/out/journal.jsonl")
status=0; "$vispec" run "$d/job.yaml" --set seed=8 2> "$work/drift.log" || status=$?
[ $status -eq 2 ] || fail "config drift: expected exit 2, got $status"
[ "$(wc -l < "$work/drift.log")" -eq 1 ] || { cat "$work/drift.log"; fail "config drift: expected one line"; }
grep -q "written by a different job configuration (seed was 7, now 8)" "$work/drift.log" || { cat "$work/drift.log"; fail "config drift: unclear message"; }
[ "$before" = "$(md5sum < "$d/out/journal.jsonl")" ] || fail "config drift: the journal was modified"
"$vispec" run "$d/job.yaml" --set seed=8 --new 2> "$work/new.log" || fail "--new"
grep -q "(0 done before" "$work/new.log" || fail "--new did not start over"
echo "ok: config drift refused in one line; --new starts over"

# 6. Other precision, hardware or software: kernels differ there, so a resume is refused in one line. Another
# dtype is asked for directly; a journal written on another GPU is the header another machine would write.
status=0; "$vispec" run "$d/job.yaml" --set seed=8 --set model.dtype=bf16 2> "$work/dtype.log" || status=$?
[ $status -eq 2 ] && [ "$(wc -l < "$work/dtype.log")" -eq 1 ] \
  && grep -q 'dtype was "fp32", now "bf16"' "$work/dtype.log" || { cat "$work/dtype.log"; fail "dtype drift"; }
"$py" - "$d/out/journal.jsonl" <<'PY'
import json, sys
path = sys.argv[1]
lines = open(path).read().splitlines()
header = json.loads(lines[0])
header["identity"]["device_model"] = "another GPU model"
header["fingerprint"] = "0123456789abcdef"
lines[0] = json.dumps(header)
open(path, "w").write("\n".join(lines) + "\n")
PY
status=0; "$vispec" run "$d/job.yaml" --set seed=8 2> "$work/hw.log" || status=$?
[ $status -eq 2 ] && [ "$(wc -l < "$work/hw.log")" -eq 1 ] \
  && grep -q 'device_model was "another GPU model", now "' "$work/hw.log" || { cat "$work/hw.log"; fail "hardware drift"; }
"$vispec" run "$d/job.yaml" --set seed=8 --new 2> "$work/new2.log" || { cat "$work/new2.log"; fail "--new after hardware drift"; }
echo "ok: another dtype or device model refused in one line; --new starts over"
