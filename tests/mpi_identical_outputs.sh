#!/usr/bin/env bash
# Real mpirun, 1 to 4 ranks, dynamic and static schedules: every run writes byte-identical images and tokens,
# the same metrics and a complete journal, equal to a run without mpirun.
set -euo pipefail
vispec=$1 src=$2
source "$src/tests/mpi_common.sh"  # sets $py and a $work directory removed at exit
write_job "$work/ref"
"$vispec" run "$work/ref/job.yaml" 2> "$work/ref.log"
for np in 1 2 3 4; do
  for schedule in dynamic static; do
    d="$work/np$np-$schedule"
    write_job "$d"
    "${MPIRUN[@]}" -np $np "$vispec" run "$d/job.yaml" --set schedule=$schedule 2> "$d.log" \
      || { cat "$d.log"; echo "FAIL: mpirun -np $np $schedule"; exit 1; }
    same_outputs "$work/ref/out" "$d/out"
    ranks=$("$py" -c "import json,sys; s=json.load(open(sys.argv[1])); print(s['ranks'], sum(r['units'] for r in s['per_rank']))" "$d/out/summary.json")
    [ "$ranks" = "$np 5" ] || { echo "FAIL: summary ranks/units '$ranks' for -np $np"; exit 1; }
    echo "ok: -np $np $schedule identical to the single-process run"
  done
done
