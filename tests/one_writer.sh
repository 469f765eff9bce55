#!/usr/bin/env bash
# One writer per output directory: while a job runs, a second run into its directory (the same job, with
# --new, with another seed, or under mpirun), `vispec distill-index` of it and a trainer writing into it fail
# at once with one line naming the holder and change nothing, and the first completes as if alone; a holder
# killed with SIGKILL leaves no stale lock.
set -euo pipefail
vispec=$1 src=$2
source "$src/tests/mpi_common.sh"  # sets $py and a $work directory removed at exit

d="$work/job"
write_job "$d"
"$vispec" run "$d/job.yaml" --out "$work/ref/out" 2> "$work/ref.log" || { cat "$work/ref.log"; fail "reference run"; }

VISPEC_FAULT=slow@3000 "$vispec" run "$d/job.yaml" 2> "$work/first.log" &
first=$!
for _ in $(seq 300); do [ -s "$d/out/.vispec.lock" ] && break; sleep 0.1; done
[ -s "$d/out/.vispec.lock" ] || fail "the first run never took the lock"
n=0
for second in "run $d/job.yaml" "run $d/job.yaml --new" "run $d/job.yaml --set seed=9"; do
  n=$((n + 1))
  status=0
  # shellcheck disable=SC2086  # $second is a command line
  timeout 30 "$vispec" $second 2> "$work/second$n.log" || status=$?
  [ $status -eq 2 ] || { cat "$work/second$n.log"; fail "second run '$second': expected exit 2, got $status"; }
  [ "$(grep -c 'vispec: error' "$work/second$n.log")" -eq 1 ] || { cat "$work/second$n.log"; fail "second run: not one line"; }
  grep -q "in use by another vispec run (host .*, pid $first, started 20" "$work/second$n.log" \
    || { cat "$work/second$n.log"; fail "second run '$second': the line does not name the holder"; }
done
status=0; timeout 60 "${MPIRUN[@]}" -np 2 "$vispec" run "$d/job.yaml" 2> "$work/second-mpi.log" || status=$?
[ $status -eq 2 ] && grep -q "in use by another vispec run" "$work/second-mpi.log" \
  || { cat "$work/second-mpi.log"; fail "second run under mpirun: expected exit 2 naming the holder, got $status"; }
# The other commands that write into a run's directory take its lock too.
for other in "distill-index $d/out" "train classifier --config $src/configs/fmnist.yaml --out $d/out --steps 1 --threads 1"; do
  status=0
  # shellcheck disable=SC2086  # $other is a command line
  timeout 60 "$vispec" $other > "$work/other.log" 2>&1 || status=$?
  [ $status -eq 2 ] && grep -q "in use by another vispec run (host .*, pid $first" "$work/other.log" \
    || { cat "$work/other.log"; fail "'vispec $other' beside a running job: expected exit 2 naming the holder, got $status"; }
done
kill -0 $first 2> /dev/null || fail "the first run ended before the second runs were tried (make it slower)"
wait $first || { cat "$work/first.log"; fail "the first run failed"; }
same_outputs "$work/ref/out" "$d/out"
echo "ok: a second run (same job, --new, another seed, mpirun), distill-index and a trainer are refused naming the holder; the first completes identically"

# The slow run's progress lines (every 5 s, 3 s per batch of 3 in units of 4) count the batches of the unit in
# hand: some line shows more images than its finished units hold, and the ETA reads h:mm:ss.
"$py" - "$work/first.log" <<'PY' || { grep "images this run" "$work/first.log"; fail "progress counts finished units only"; }
import re, sys
lines = [re.search(r"units (\d+)/5  (\d+) images this run  [0-9.]+ images/s  ETA (\S+)", l) for l in open(sys.argv[1])]
lines = [m for m in lines if m]
assert lines and all(re.fullmatch(r"\d+:\d\d:\d\d|\?", m.group(3)) for m in lines), [m.group(0) for m in lines]
assert any(int(m.group(2)) > 4 * int(m.group(1)) for m in lines), [m.group(0) for m in lines]
PY
echo "ok: progress counts every batch written"

VISPEC_FAULT=kill-at-unit@2 "$vispec" run "$d/job.yaml" --new 2> /dev/null && fail "the killed run exited 0"
"$vispec" run "$d/job.yaml" 2> "$work/after-kill.log" || { cat "$work/after-kill.log"; fail "rerun after SIGKILL"; }
same_outputs "$work/ref/out" "$d/out"
echo "ok: a killed holder leaves no stale lock"
