#!/usr/bin/env bash
# What a job's outputs cost the file system and every run's start and end, `output: files` against
# `output: shards`, for a job of 10^5 images (10 prompts x 10,000 images, units of 64: 1,563 units). Writes
# bench/results/output-scaling.{json,md}.
#   bash bench/output_scaling.sh [build/vispec]
# Decoding 10^5 images takes hours on a CPU, and these costs depend on the files, not on what they show: so
# each format's unit 0 is decoded by vispec, and its files are copied (not linked: every copy is an inode) to
# units 1..1561 under their own names, with journal records like the one vispec wrote. Then, per format:
#   inodes          files and directories under OUT
#   journal bytes   OUT/journal.jsonl
#   end of run      a requeued run that decodes the last unit (32 images): the seconds from its last progress
#                   line to its "done" line (metrics.jsonl and summary.json). Measured from the same state twice
#                   over, interleaved: metrics.jsonl extended (now) and rebuilt from every unit's file (what
#                   every run did before: the summary's record of the file removed)
#   no-op rerun     the whole run when nothing is left to do (the start's check stats every journaled file)
#   verify          `vispec verify` (every file read)
set -euo pipefail
vispec=$(realpath "${1:-build/vispec}")
src=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
seconds() { local t0; t0=$(date +%s.%N); "$@" > /dev/null 2>&1; echo "$(date +%s.%N) - $t0" | bc; }

for format in files shards; do
  d=$work/$format
  mkdir -p "$d"
  cat > "$d/job.yaml" <<YAML
model: $src/configs/fmnist.yaml
prompts: $src/jobs/demo-prompts.txt
decoder: {name: ar}
images_per_prompt: 10000
unit_size: 64
batch_size: 64
threads: 2
seed: 0
output: $format
out: $d/out
YAML
  # Unit 0 decoded; the run is killed as unit 1 starts.
  VISPEC_FAULT=kill-at-unit@1 "$vispec" run "$d/job.yaml" > /dev/null 2>&1 || true
  /usr/bin/python3 "$src/bench/output_scaling_copy.py" "$d/out" copy
  "$vispec" run "$d/job.yaml" > /dev/null 2>&1  # decodes unit 1562: the job is whole
  echo "$format: $(find "$d/out" | wc -l) inodes" >&2
  for rep in 1 2; do
    for mode in extend rebuild; do
      /usr/bin/python3 "$src/bench/output_scaling_copy.py" "$d/out" requeue "$mode"
      "$vispec" run "$d/job.yaml" 2> "$d/$mode-$rep.log" > /dev/null
    done
  done
  seconds "$vispec" run "$d/job.yaml" > "$d/noop.s"
  seconds "$vispec" verify "$d/out" > "$d/verify.s"
done
/usr/bin/python3 "$src/bench/output_scaling_copy.py" "$work" report "$src/bench/results" "$(nproc)"
