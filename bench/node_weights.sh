#!/usr/bin/env bash
# Weights read once per node against every rank reading them, side by side in one run of this script:
# `vispec run` of one image under mpirun -np 4 (one node), read_weights: once_per_node and every_rank, each
# with a cold page cache (dropped before the run, where this machine lets root do it) and a warm one. The
# target is a GPT of LlamaGen's GPT-L shape with random weights (a safetensors file written here, fp32,
# vocabulary 512 to pair with the embedded VQ). Figures per run: the slowest rank's load time (the job waits
# for it) and the bytes the ranks read from weight files. Writes bench/results/node-weights.{json,md}.
#   bash bench/node_weights.sh [build/vispec] [preset]
set -euo pipefail
vispec=$(realpath "${1:-build/vispec}")
preset=${2:-GPT-L}
src=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
py=$src/.venv/bin/python
ranks=4

# The checkpoint: LlamaGen's tensor names for the preset's sizes (models/gpt/gpt_presets.cpp), multiple_of 256.
"$py" - "$work/gpt.safetensors" "$preset" <<'PY'
import json, struct, sys, torch
path, preset = sys.argv[1:3]
L, D = {"GPT-B": (12, 768), "GPT-L": (24, 1024), "GPT-XL": (36, 1280)}[preset]
V, C = 512, 10
H = ((int(2 * 4 * D / 3) + 255) // 256) * 256
shapes = {"tok_embeddings.weight": [V, D], "cls_embedding.embedding_table.weight": [C + 1, D], "norm.weight": [D],
          "output.weight": [V, D]}
for i in range(L):
    p = f"layers.{i}."
    shapes.update({p + "attention.wqkv.weight": [3 * D, D], p + "attention.wo.weight": [D, D],
                   p + "feed_forward.w1.weight": [H, D], p + "feed_forward.w3.weight": [H, D],
                   p + "feed_forward.w2.weight": [D, H], p + "attention_norm.weight": [D], p + "ffn_norm.weight": [D]})
header, offset = {}, 0
for k in sorted(shapes):
    n = 4 * torch.Size(shapes[k]).numel()
    header[k] = {"dtype": "F32", "shape": shapes[k], "data_offsets": [offset, offset + n]}
    offset += n
h = json.dumps(header).encode()
h += b" " * (-len(h) % 8)
g = torch.Generator().manual_seed(0)
with open(path, "wb") as f:
    f.write(struct.pack("<Q", len(h)) + h)
    for k in sorted(shapes):
        f.write((torch.randn(shapes[k], generator=g) * 0.02).numpy().tobytes())
PY
# The embedded config with this GPT in place of its own; one prompt, one image, greedy.
sed -e "s|weights: fmnist/gpt.safetensors|weights: $work/gpt.safetensors\n  preset: $preset|" \
    -e "s|fmnist/|$src/configs/fmnist/|g" -e '/^  dim:/d; /^  n_layer:/d; /^  n_head:/d; /^  multiple_of:/d' \
    -e '/^drafters:/,$d' "$src/configs/fmnist.yaml" > "$work/model.yaml"
echo bag > "$work/prompts.txt"
printf 'model: model.yaml\nprompts: prompts.txt\ndecoder: {name: ar, temperature: 0}\nbatch_size: 1\nthreads: 1\n' \
  > "$work/job.yaml"

can_drop=0
sync && echo 3 > /proc/sys/vm/drop_caches 2> /dev/null && can_drop=1
for cache in cold warm; do
  [ $cache = warm ] || [ $can_drop = 1 ] || continue
  for mode in every_rank once_per_node; do
    if [ $cache = cold ]; then sync && echo 3 > /proc/sys/vm/drop_caches; fi
    mpirun --allow-run-as-root --oversubscribe -np $ranks "$vispec" run "$work/job.yaml" --out "$work/$mode-$cache" \
      --set read_weights=$mode > "$work/$mode-$cache.log" 2>&1 || { cat "$work/$mode-$cache.log"; exit 1; }
  done
done

/usr/bin/python3 - "$work" "$src/bench/results" "$preset" "$ranks" "$(du -m "$work/gpt.safetensors" | cut -f1)" <<'PY'
import json, os, sys
work, results, preset, ranks, file_mb = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
rows = []
for cache in ("cold", "warm"):
    for mode in ("every_rank", "once_per_node"):
        path = f"{work}/{mode}-{cache}/summary.json"
        if not os.path.exists(path):
            continue
        per_rank = json.load(open(path))["per_rank"]
        rows.append({"cache": cache, "read_weights": mode,
                     "load_s_max": max(r["load_s"] for r in per_rank),
                     "read_mb": sum(r["weights_read_mb"] for r in per_rank),
                     "received_mb": sum(r["weights_received_mb"] for r in per_rank)})
os.makedirs(results, exist_ok=True)
json.dump({"preset": preset, "ranks": ranks, "file_mb": file_mb, "rows": rows},
          open(f"{results}/node-weights.json", "w"), indent=2)
lines = [f"Loading a {preset}-shaped GPT ({file_mb} MB fp32 safetensors) plus the embedded VQ on {ranks} ranks of one "
         "node, CPU (`bash bench/node_weights.sh`):", "",
         "| page cache | read_weights | slowest rank's load | copied out of weight files | received from rank 0 |",
         "| --- | --- | ---: | ---: | ---: |"]
for r in rows:
    lines.append(f"| {r['cache']} | {r['read_weights']} | {r['load_s_max']:.2f} s | {r['read_mb']:.0f} MB | "
                 f"{r['received_mb']:.0f} MB |")
open(f"{results}/node-weights.md", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
