#!/usr/bin/env bash
# Retrains the embedded model family (configs/fmnist/) stage by stage in RUN (default runs/retrain), with the
# commands configs/README.md lists. A stage whose output exists is skipped and every trainer resumes from its
# last checkpoint, so after any interruption the same command carries on where it stopped. Ranks run under
# mpirun, one thread each (data-parallel training; the curve does not depend on the rank count).
#
#   bash scripts/retrain_embedded.sh [--np N] [--stop-after STAGE] [RUN]    train, distil, evaluate
#   bash scripts/retrain_embedded.sh --install [RUN]                         copy RUN's weights into configs/fmnist/
#
# Stages, in order:
#   gpt         the target GPT: 8000 steps of 64 (8.5 epochs), peak lr 2e-3; held-out loss every 250 steps
#   eval_gpt    1000 AR images at the AR baseline's setting (CFG 2, T = 1, 100 per class): class agreement and
#               FID against the 10k test images -> RUN/eval-gpt/eval.json (floors: bench/results/floors.md)
#   distill     10000 samples of the new target (both CFG streams, bf16), the heads' training data
#   eagle_head  EAGLE's draft head and SSD's heads from that data (4000 steps of 16 each)
#   ssd_heads
#   draft_gpt   SD's draft GPT on the target's token cache: 3000 steps of 64
#   mulo_gpt    MuLo-SD's half-resolution GPT: 4000 steps of 64
# The distillation data (1.4 GB, never committed) comes right after the evaluation so that it and the two heads
# trained from it are made in one sitting, then deleted; the two GPT stages after them resume from checkpoints.
# MuLo-SD's resamplers map between the VQ's latent grids and do not depend on the GPT: the shipped ones stay.
# RUN/fmnist.yaml is the embedded config with every weight this run has made so far in place of the shipped
# one; later stages train against it. Logs: RUN/<stage>.log and each trainer's RUN/<stage>/log.jsonl.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
vispec=${VISPEC:-$src/build/vispec}
np=2 install=0 stop_after="" run=""
while [ $# -gt 0 ]; do
  case "$1" in
    --np) np=$2; shift ;;
    --install) install=1 ;;
    --stop-after) stop_after=$2; shift ;;
    -h|--help) sed -n '2,23p' "$0"; exit 0 ;;
    -*) echo "retrain_embedded: unknown option $1" >&2; exit 2 ;;
    *) run=$1 ;;
  esac
  shift
done
run=$(realpath -m "${run:-$src/runs/retrain}")
mkdir -p "$run"
mpi=(mpirun --allow-run-as-root --oversubscribe -np "$np" -x OMP_NUM_THREADS=1)

# weight NAME: RUN's export of a stage if it exists, else the shipped file.
weight() { [ -f "$run/$1/model.safetensors" ] && echo "$run/$1/model.safetensors" || echo "$src/configs/fmnist/$1.safetensors"; }
write_config() {
  sed -e "s|fmnist/gpt.safetensors|$(weight gpt)|" -e "s|fmnist/draft_gpt.safetensors|$(weight draft_gpt)|" \
      -e "s|fmnist/mulo_gpt.safetensors|$(weight mulo_gpt)|" -e "s|fmnist/eagle_head.safetensors|$(weight eagle_head)|" \
      -e "s|fmnist/ssd_heads.safetensors|$(weight ssd_heads)|" -e "s|fmnist/|$src/configs/fmnist/|g" \
      "$src/configs/fmnist.yaml" > "$run/fmnist.yaml"
}

if [ $install = 1 ]; then
  for name in gpt draft_gpt mulo_gpt eagle_head ssd_heads; do
    [ -f "$run/$name/model.safetensors" ] || { echo "retrain_embedded: $run/$name/model.safetensors missing" >&2; exit 2; }
  done
  for name in gpt draft_gpt mulo_gpt eagle_head ssd_heads; do
    cp "$run/$name/model.safetensors" "$src/configs/fmnist/$name.safetensors"
    echo "installed configs/fmnist/$name.safetensors"
  done
  exit 0
fi

# stage NAME COMMAND...: runs COMMAND unless RUN/NAME.done exists; logs to RUN/NAME.log.
stage() {
  local name=$1; shift
  write_config
  if [ ! -f "$run/$name.done" ]; then
    echo "$(date -u +%FT%TZ) stage $name" | tee -a "$run/stages.log"
    "$@" >> "$run/$name.log" 2>&1 || { echo "stage $name failed: see $run/$name.log" >&2; exit 1; }
    date -u +%FT%TZ > "$run/$name.done"
  fi
  if [ "$stop_after" = "$name" ]; then exit 0; fi
}
train() {  # train KIND OUT ARGS...: a trainer under mpirun, exporting OUT/model.safetensors
  local kind=$1 out=$2; shift 2
  "${mpi[@]}" "$vispec" train "$kind" --config "$run/fmnist.yaml" --out "$out" --threads 1 "$@"
}
# SD's draft GPT learns the target's images through the same VQ: it starts from the target's token cache where
# this machine still has it (the cache is not committed with the run; without it the trainer tokenises anew).
draft_gpt() {
  mkdir -p "$run/draft_gpt"
  [ ! -f "$run/gpt/tokens.safetensors" ] || cp -n "$run/gpt/tokens.safetensors" "$run/draft_gpt/tokens.safetensors"
  train gpt "$run/draft_gpt" --drafter --steps 3000 --batch-size 64 --lr 2e-3 --warmup 100 --log-every 50 \
      --checkpoint-every 250
}
evaluate() {  # evaluate OUT: 1000 AR images with the new target, judged
  printf 'model: %s\nprompts: %s\ndecoder: {name: ar, cfg_scale: 2.0, temperature: 1.0}\nimages_per_prompt: 100\nseed: 0\nbatch_size: 50\nunit_size: 50\nthreads: 1\nout: %s\n' \
    "$run/fmnist.yaml" "$src/jobs/demo-prompts.txt" "$1" > "$run/eval-gpt.yaml"
  "${mpi[@]}" "$vispec" run "$run/eval-gpt.yaml" && "$vispec" eval "$1" --threads "$np"
}

stage gpt train gpt "$run/gpt" --steps 8000 --batch-size 64 --lr 2e-3 --warmup 200 --log-every 50 --checkpoint-every 250
stage eval_gpt evaluate "$run/eval-gpt"
# The distillation data is not kept from one machine to the next: gone before both heads are trained, it is made
# again (the same samples: their randomness is keyed by seed and sample id). Once both are, it is deleted.
[ -f "$run/ssd_heads.done" ] || [ -d "$run/d10k" ] || rm -f "$run/distill.done"
stage distill "${mpi[@]}" "$vispec" run "$src/jobs/distill-demo.yaml" --out "$run/d10k" --set model="$run/fmnist.yaml" \
  --set images_per_prompt=1000 --set unit_size=100 --set threads=1
heads=(--data "$run/d10k" --batch-size 16 --lr 1e-3 --warmup 100 --weight-decay 0.01 --log-every 100
       --checkpoint-every 500 --heldout-rows 200 --steps 4000)
stage eagle_head train eagle-head "$run/eagle_head" "${heads[@]}"
stage ssd_heads train ssd-heads "$run/ssd_heads" "${heads[@]}"
rm -rf "$run/d10k"
stage draft_gpt draft_gpt
stage mulo_gpt train gpt "$run/mulo_gpt" --mulo --steps 4000 --batch-size 64 --lr 2e-3 --warmup 100 --log-every 50 --checkpoint-every 250
write_config
echo "done: $run/fmnist.yaml names the retrained family; --install copies it into configs/fmnist/"
