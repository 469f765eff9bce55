#!/usr/bin/env bash
# What distillation costs a job, measured side by side in one run of this script: the same AR job (100 images,
# batch 25, units of 50) without distillation, with the cond stream and with both CFG streams (bf16),
# repeated twice in interleaved order (A B C A B C). Writes bench/results/distill-overhead.{json,md}.
#   bash bench/distill_overhead.sh [build/vispec]
set -euo pipefail
vispec=${1:-build/vispec}
src=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
base="model: $src/configs/fmnist.yaml
prompts: $src/jobs/demo-prompts.txt
decoder: {name: ar, cfg_scale: 2.0}
images_per_prompt: 10
batch_size: 25
unit_size: 50
seed: 0"
printf '%s\n' "$base" > "$work/none.yaml"
printf '%s\ndistill: {streams: cond, dtype: bf16}\n' "$base" > "$work/cond.yaml"
printf '%s\ndistill: {streams: cond+uncond, dtype: bf16}\n' "$base" > "$work/both.yaml"
for rep in 1 2; do
  for v in none cond both; do
    "$vispec" run "$work/$v.yaml" --out "$work/out-$v-$rep" 2> "$work/$v-$rep.log"
  done
done
/usr/bin/python3 - "$work" "$src/bench/results" "$(nproc)" <<'PY'
import glob, json, os, sys
work, results, cores = sys.argv[1], sys.argv[2], sys.argv[3]
rows = []
for v in ("none", "cond", "both"):
    walls = [json.load(open(f"{work}/out-{v}-{r}/summary.json"))["wall_s"] for r in (1, 2)]
    files = glob.glob(f"{work}/out-{v}-1/distill/unit-*.h5")
    rows.append({"distill": v, "wall_s": walls, "bytes_per_sample": sum(map(os.path.getsize, files)) / 100 if files else 0})
base = sum(rows[0]["wall_s"])
for r in rows:
    r["time_ratio"] = sum(r["wall_s"]) / base
out = {"job": "AR, CFG 2, 100 images, batch 25, units of 50, 2 interleaved repetitions", "cores": int(cores), "rows": rows}
json.dump(out, open(f"{results}/distill-overhead.json.tmp", "w"), indent=2)
os.replace(f"{results}/distill-overhead.json.tmp", f"{results}/distill-overhead.json")
names = {"none": "no distillation", "cond": "cond stream, bf16", "both": "cond + uncond streams, bf16"}
md = [f"{out['job']}, CPU with {cores} cores.", "",
      "| distill | wall s (rep 1, rep 2) | time vs no distillation | bytes per sample |", "| --- | --- | ---: | ---: |"]
for r in rows:
    md.append(f"| {names[r['distill']]} | {r['wall_s'][0]:.2f}, {r['wall_s'][1]:.2f} | {r['time_ratio']:.2f} | {r['bytes_per_sample']:.0f} |")
open(f"{results}/distill-overhead.md.tmp", "w").write("\n".join(md) + "\n")
os.replace(f"{results}/distill-overhead.md.tmp", f"{results}/distill-overhead.md")
print("\n".join(md))
PY
