#!/usr/bin/env bash
# Data-parallel training throughput, measured side by side in one run of this script: `vispec train gpt` on
# the embedded model's architecture (batch 32, 30 steps, samples/s over steps 11-30) alone with 1 thread,
# alone with all cores' threads, and under mpirun with one rank per core and 1 thread each. The training set
# is the token grids of a small AR run of the embedded model (throughput does not depend on which tokens).
# Writes bench/results/train-throughput.{json,md}.
#   bash bench/train_throughput.sh [build/vispec]
set -euo pipefail
vispec=$(realpath "${1:-build/vispec}")
src=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cores=$(nproc)
mkdir -p "$work/d"
printf 'trouser\nbag\nsneaker\ndress\ncoat\nsandal\n' > "$work/d/prompts.txt"
printf 'model: %s/configs/fmnist.yaml\nprompts: prompts.txt\ndecoder: {name: ar, cfg_scale: 2.0}\nimages_per_prompt: 3\nout: %s/d/out\n' \
  "$src" "$work" > "$work/d/job.yaml"
"$vispec" run "$work/d/job.yaml" > /dev/null 2>&1
# train gpt's token cache from those grids.
/usr/bin/python3 "$src/scripts/gpt_token_cache.py" "$work/d/out" "$work/tokens.safetensors"
args=(train gpt --config "$src/configs/fmnist.yaml" --seed 3 --steps 30 --batch-size 32 --log-every 10
      --checkpoint-every 1000 --warmup 5)
for setup in "1 1" "1 $cores" "$cores 1"; do
  set -- $setup
  d=$work/np$1-t$2
  mkdir -p "$d" && cp "$work/tokens.safetensors" "$d/"
  if [ "$1" = 1 ]; then
    OMP_NUM_THREADS=$2 "$vispec" "${args[@]}" --threads "$2" --out "$d" > "$d.log" 2>&1
  else
    OMP_NUM_THREADS=$2 mpirun --allow-run-as-root --oversubscribe -np "$1" "$vispec" "${args[@]}" --threads "$2" \
      --out "$d" > "$d.log" 2>&1
  fi
done
/usr/bin/python3 - "$work" "$src/bench/results" "$cores" <<'PY'
import json, os, sys
work, results, cores = sys.argv[1], sys.argv[2], int(sys.argv[3])
rows = []
for ranks, threads in ((1, 1), (1, cores), (cores, 1)):
    log = [json.loads(l) for l in open(f"{work}/np{ranks}-t{threads}/log.jsonl")]
    steps = [r for r in log if "loss" in r]
    a, b = steps[0], steps[-1]
    rows.append({"ranks": ranks, "threads_per_rank": threads,
                 "samples_per_s": (b["step"] - a["step"]) * 32 / (b["elapsed_s"] - a["elapsed_s"])})
base = rows[0]["samples_per_s"]
out = {"job": "train gpt, the embedded model's GPT (1.41M parameters, 256 tokens), batch 32, steps 11-30",
       "cores": cores, "rows": rows}
json.dump(out, open(f"{results}/train-throughput.json.tmp", "w"), indent=2)
os.replace(f"{results}/train-throughput.json.tmp", f"{results}/train-throughput.json")
md = [f"{out['job']}, CPU with {cores} cores.", "",
      "| ranks | threads per rank | samples/s | vs 1 rank, 1 thread |", "| ---: | ---: | ---: | ---: |"]
for r in rows:
    md.append(f"| {r['ranks']} | {r['threads_per_rank']} | {r['samples_per_s']:.1f} | {r['samples_per_s'] / base:.2f} |")
open(f"{results}/train-throughput.md.tmp", "w").write("\n".join(md) + "\n")
os.replace(f"{results}/train-throughput.md.tmp", f"{results}/train-throughput.md")
print("\n".join(md))
PY
