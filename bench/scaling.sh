#!/usr/bin/env bash
# Scaling of `vispec run` over MPI ranks on the embedded model, measured side by side in one run of this script:
# the same job (200 images in 25 units of 8, batch 8, one thread per rank) on 1, 2 and 4 ranks, dynamic schedule.
# Writes bench/results/scaling.json and bench/results/scaling.md (spliced into docs/cluster.md).
#   bash bench/scaling.sh [build/vispec]
set -euo pipefail
vispec=${1:-build/vispec}
src=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ranks=(1 2 4)
cat > "$work/job.yaml" <<YAML
model: $src/configs/fmnist.yaml
prompts: $src/jobs/demo-prompts.txt
decoder: {name: ar, cfg_scale: 2.0}
images_per_prompt: 20
unit_size: 8
batch_size: 8
threads: 1
seed: 0
out: $work/out
YAML
for np in "${ranks[@]}"; do
  start=$(date +%s.%N)
  mpirun --allow-run-as-root --oversubscribe -np "$np" "$vispec" run "$work/job.yaml" --out "$work/np$np" 2> "$work/np$np.log"
  end=$(date +%s.%N)
  echo "$start $end" > "$work/np$np.time"
done
/usr/bin/python3 - "$work" "$src/bench/results" "$(nproc)" "${ranks[@]}" <<'PY'
import json, os, sys
work, results, cores, ranks = sys.argv[1], sys.argv[2], int(sys.argv[3]), [int(r) for r in sys.argv[4:]]
rows = []
for np_ in ranks:
    s = json.load(open(f"{work}/np{np_}/summary.json"))
    t0, t1 = map(float, open(f"{work}/np{np_}.time").read().split())
    rows.append({"ranks": np_, "images": s["images"], "units": s["units_total"], "wall_s": s["wall_s"],
                 "process_s": t1 - t0, "images_per_s": s["images_per_s"],
                 "scheduling_overhead_ms_per_unit": s["scheduling_overhead_ms_per_unit"],
                 "per_rank_images": [r["images"] for r in s["per_rank"]]})
base = rows[0]["images_per_s"]
for r in rows:
    r["speedup"] = r["images_per_s"] / base
    r["efficiency"] = r["speedup"] / r["ranks"]
out = {"cores": cores, "job": "200 images, 25 units of 8, batch 8, 1 thread per rank, dynamic", "rows": rows}
os.makedirs(results, exist_ok=True)
json.dump(out, open(f"{results}/scaling.json.tmp", "w"), indent=2)
os.replace(f"{results}/scaling.json.tmp", f"{results}/scaling.json")
md = [f"{out['job']}; machine with {cores} cores (more ranks than cores are oversubscribed).", "",
      "| ranks | images/s (decode loop) | speedup vs 1 rank | efficiency | images per rank | scheduling overhead per unit | whole mpirun |",
      "| ---: | ---: | ---: | ---: | --- | ---: | ---: |"]
for r in rows:
    md.append(f"| {r['ranks']} | {r['images_per_s']:.2f} | {r['speedup']:.2f} | {r['efficiency']:.2f} | "
              f"{'/'.join(map(str, r['per_rank_images']))} | {r['scheduling_overhead_ms_per_unit']:.2f} ms | {r['process_s']:.1f} s |")
open(f"{results}/scaling.md.tmp", "w").write("\n".join(md) + "\n")
os.replace(f"{results}/scaling.md.tmp", f"{results}/scaling.md")
print("\n".join(md))
PY
