#!/usr/bin/env bash
# The drafters on the LLM families, end to end on tiny random models of each (made here by
# tests/tiny_families.py, with tokenizers of each family's shape):
#   1. `vispec run` with `distill:` on a prompt file of captions: hidden states of image positions only (the
#      prompt's positions are not stored), read back by h5py; at T = 0 both streams' stored states, through the
#      checkpoint's own final norm and image head (read here with safetensors and torch) and guidance, pick the
#      tokens decoded;
#   2. `vispec train eagle-head` and `train ssd-heads` on that data;
#   3. EAGLE-2, EAGLE-1, ADT-Tree, LANTERN and SSD at temperature 0 give AR's tokens, image for image (SSD with as
#      many correction rounds as the row is wide: it is lossy by design, and AR's greedy row at T = 0 only then);
#   4. SD with a perturbed copy of the family's model as its draft (as Janus-Pro-1B drafts for 7B, read in the
#      family's own names) and MuLo-SD with tau above 1 (every draft rejected) give AR's tokens at T = 0;
#   5. Cool-SD, LANTERN++, SJD, ZipAR, SD and MuLo-SD generate at T = 1 (their bounds are proven in their own
#      tests); MuLo-SD's drafter is the family's model on the half grid, Emu3's with a prompt of its own (2*2),
#      which changes the drafts kept at tau = 0; a job whose tokenizer file changed does not resume into the
#      old outputs; bad input (another family's checkpoint, a tokenizer of another kind) exits 2 in one line.
set -euo pipefail
vispec=$1 src=$2
py=${VISPEC_TEST_PYTHON:-/usr/bin/python3}
torch_py=${VISPEC_TORCH_PYTHON:?the virtual environment python with transformers}
work=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

(cd "$work" && "$torch_py" "$src/tests/tiny_families.py" > make.log 2>&1) || { cat "$work/make.log"; fail "tiny families"; }
printf 'a red bus\na cat on a sofa\na lighthouse at dusk\ngreen apples\n' > "$work/captions.txt"
vq="weights: $src/configs/fmnist/vq.safetensors, codebook_size: 512, codebook_embed_dim: 8, in_channels: 1, z_channels: 32, ch: 32, ch_mult: [1, 2], num_res_blocks: 1, norm_groups: 8"
shape="vocab_size: 512, dim: 64, n_layer: 2, n_head: 4, ffn_hidden_size: 96, grid_size: 4, cls_token_num: 72, rope: 1d, qkv: separate, text_vocab_size: 600"
declare -A options prompt
options[chameleon]="names: hf_llama, qk_norm: true, n_kv_head: 2, norm_eps: 1.0e-5, image_token_offset: 4"
options[janus]="names: hf_janus, norm_eps: 1.0e-6, image_input: aligner_mlp, image_embed_dim: 8, image_output: head_mlp, image_mlp_dim: 64"
options[emu3]="names: hf_llama, rope_base: 1.0e6, n_kv_head: 2, norm_eps: 1.0e-5, image_token_offset: 4, eol_token: 597"
prompt[chameleon]="{tokenizer: $work/chameleon_tokenizer/tokenizer.json, template: \"<s>{prompt}<reserved08706><racm3:break>\", unconditional: \"<s><racm3:break>\"}"
prompt[janus]="{tokenizer: $work/janus_tokenizer/tokenizer.json, template: \"<｜begin▁of▁sentence｜><|User|>: {prompt}\\\\n\\\\n<|Assistant|>:<begin_of_image>\", unconditional_pad: \"<｜▁pad▁｜>\"}"
prompt[emu3]="{tokenizer: {emu3_tiktoken: $work/emu3_tokenizer/emu3.tiktoken, emu3_vision_tokens: $work/emu3_tokenizer/emu3_vision_tokens.txt}, template: \"<|extra_203|>{prompt} masterpiece.<|image start|>4*4<|image token|>\", unconditional: \"<|extra_203|>lowres.<|image start|>4*4<|image token|>\"}"

declare -A mulo_prompt
mulo_prompt[emu3]=", prompt: {template: \"<|extra_203|>{prompt} masterpiece.<|image start|>2*2<|image token|>\", unconditional: \"<|extra_203|>lowres.<|image start|>2*2<|image token|>\"}"

job() {  # job FAM NAME DECODER [EXTRA]: a job file on FAM's model
  cat > "$work/$1/$2.yaml" <<YAML
model: $work/$1/model.yaml
prompts: $work/captions.txt
decoder: {$3}
images_per_prompt: ${5:-2}
seed: 0
batch_size: 8
unit_size: 50
threads: 1
device: cpu
out: $work/$1/$2
${4:-}
YAML
}

for fam in chameleon janus emu3; do
  mkdir -p "$work/$fam"
  printf 'name: tiny-%s\ngpt: {weights: %s, %s, %s}\nvq: {%s}\nprompt: %s\n' "$fam" \
    "$work/$fam/model.safetensors.index.json" "$shape" "${options[$fam]}" "$vq" "${prompt[$fam]}" > "$work/$fam/model.yaml"
  # 1. Distillation data from 100 sampled images of the four captions, both streams.
  job "$fam" distill "name: ar, cfg_scale: 3.0, temperature: 1.0" "distill: {streams: cond+uncond, dtype: fp32}" 25
  "$vispec" run "$work/$fam/distill.yaml" > "$work/$fam.log" 2>&1 || { cat "$work/$fam.log"; fail "$fam distill"; }
  (cd / && "$py" - "$work/$fam/distill" <<'PY'
import sys
import h5py, numpy as np
out = sys.argv[1]
with h5py.File(f"{out}/distill/index.h5", "r") as f:
    assert f["hidden"].shape == (100, 2, 16, 64), f["hidden"].shape  # image positions only
    assert (f["class_id"][()] == -1).all() and list(f["sample_id"][()]) == list(range(100))
    for i, sid in enumerate(f["sample_id"][()]):
        assert (np.load(f"{out}/tokens/{sid:08d}.npy").reshape(-1) == f["tokens"][i]).all(), sid
    assert np.isfinite(f["hidden"][()]).all()
PY
  ) || fail "$fam distillation data"
  # Greedy: the stored states give back the tokens through the model's own head (hidden[t] predicts token t).
  job "$fam" distill_greedy "name: ar, cfg_scale: 3.0, temperature: 0" "distill: {streams: cond+uncond, dtype: fp32}" 1
  "$vispec" run "$work/$fam/distill_greedy.yaml" >> "$work/$fam.log" 2>&1 || { cat "$work/$fam.log"; fail "$fam greedy distill"; }
  (cd / && "$py" -c "import h5py, numpy as np, sys; f = h5py.File(sys.argv[1], 'r');
np.save(sys.argv[2], f['hidden'][()]); np.save(sys.argv[3], f['tokens'][()])" \
    "$work/$fam/distill_greedy/distill/index.h5" "$work/$fam/hidden.npy" "$work/$fam/tokens.npy")
  "$torch_py" - "$work/$fam" "$fam" <<'PY' || fail "$fam: the stored hidden states do not give the decoded tokens"
import json, sys
import numpy as np, torch
from safetensors import safe_open
d, fam = sys.argv[1:]
index = json.load(open(f"{d}/model.safetensors.index.json"))["weight_map"]
def w(name):
    with safe_open(f"{d}/{index[name]}", "pt") as f:
        return f.get_tensor(name).double()
h = torch.from_numpy(np.load(f"{d}/hidden.npy")).double()  # [N, 2, T, D], before the final norm
tokens = torch.from_numpy(np.load(f"{d}/tokens.npy")).long()
norm, eps = {"chameleon": ("model.norm.weight", 1e-5), "janus": ("model.language_model.norm.weight", 1e-6),
             "emu3": ("text_model.model.norm.weight", 1e-5)}[fam]
x = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps) * w(norm)
if fam == "janus":
    x = torch.nn.functional.gelu(x @ w("model.generation_head.proj_out.weight").T + w("model.generation_head.proj_out.bias"))
    logits = x @ w("model.generation_head.vision_head.weight").T + w("model.generation_head.vision_head.bias")
else:  # the LM head's image rows: codes 0 .. 511 are ids 4 .. 515
    logits = x @ w({"chameleon": "lm_head.weight", "emu3": "text_model.lm_head.weight"}[fam])[4:516].T
guided = logits[:, 1] + 3.0 * (logits[:, 0] - logits[:, 1])
assert (guided.argmax(-1) == tokens).all(), (guided.argmax(-1), tokens)
PY
  # 2. The heads, trained on it.
  for head in "eagle-head eagle" "ssd-heads ssd --horizontal 2 --vertical 1"; do
    set -- $head
    kind=$1 dir=$2
    shift 2
    "$vispec" train "$kind" --config "$work/$fam/model.yaml" --data "$work/$fam/distill" --out "$work/$fam/$dir" \
      --steps 120 --batch-size 16 --threads 1 --log-every 60 --checkpoint-every 120 "$@" >> "$work/$fam.log" 2>&1 ||
      { cat "$work/$fam.log"; fail "$fam train $kind"; }
  done
  # MuLo-SD's drafter: the family's model itself on the half grid (its 1D positions know no grid), the shipped
  # resamplers of the embedded model's VQ (the tiny families decode with it); Emu3's names its size, 2*2.
  resamplers="weights: $src/configs/fmnist/mulo_resamplers.safetensors, width: 64, blocks: 2"
  mulo="{gpt: {weights: $work/$fam/model.safetensors.index.json, ${options[$fam]%%,*}}, resamplers: {$resamplers}${mulo_prompt[$fam]:-}}"
  printf 'drafters: {eagle_head: %s, ssd_heads: %s, gpt: {weights: %s, %s}, mulo: %s}\n' "$work/$fam/eagle/model.safetensors" \
    "$work/$fam/ssd/model.safetensors" "$work/${fam}_draft/model.safetensors.index.json" "${options[$fam]%%,*}" "$mulo" \
    >> "$work/$fam/model.yaml"
  # 3. and 4. Greedy decoding with them equals AR's; and MuLo-SD's with tau above 1 (every draft rejected).
  for decoder in "ar" "eagle2" "eagle1" "adt_tree" "lantern" "ssd, kh: 2, kv: 1, r: 4" "sd, gamma: 3" "mulo_sd, tau: 1.5"; do
    name=${decoder%%,*}
    job "$fam" "greedy_$name" "name: $decoder, cfg_scale: 3.0, temperature: 0"
    "$vispec" run "$work/$fam/greedy_$name.yaml" >> "$work/$fam.log" 2>&1 || { cat "$work/$fam.log"; fail "$fam $name"; }
    [ "$name" = ar ] || diff -r "$work/$fam/greedy_ar/tokens" "$work/$fam/greedy_$name/tokens" > /dev/null ||
      fail "$fam: $name's greedy tokens differ from AR's"
  done
  # The perturbed draft agrees with the target on some tokens and not on others: both of SD's paths ran.
  "$py" -c "import json, sys; r = json.load(open(sys.argv[1]))['acceptance_rate']; print('sd greedy acceptance', r);
sys.exit(not 0.05 < r < 0.95)" "$work/$fam/greedy_sd/summary.json" >> "$work/$fam.log" ||
    fail "$fam: SD's greedy acceptance rate outside (0.05, 0.95): $(tail -1 "$work/$fam.log")"
  # 5. The relaxed and training-free decoders, SD and MuLo-SD generate too (their own tests prove their bounds).
  for decoder in "coolsd" "lanternpp" "sjd, window: 3" "zipar, window: 2" "sd" "mulo_sd"; do
    name=${decoder%%,*}
    job "$fam" "sampled_$name" "name: $decoder, cfg_scale: 3.0, temperature: 1.0"
    "$vispec" run "$work/$fam/sampled_$name.yaml" >> "$work/$fam.log" 2>&1 || { cat "$work/$fam.log"; fail "$fam $name"; }
    [ "$(ls "$work/$fam/sampled_$name/tokens" | wc -l)" = 8 ] || fail "$fam $name: not 8 images"
  done
  if [ "$fam" = chameleon ]; then  # the tokenizer makes the prompts' ids: another file is another job
    echo >> "$work/chameleon_tokenizer/tokenizer.json"
    if "$vispec" run "$work/$fam/greedy_ar.yaml" > "$work/resume.err" 2>&1; then fail "a changed tokenizer resumed"; fi
    grep -q "written by a different job configuration (weights.tokenizer.bytes" "$work/resume.err" ||
      { cat "$work/resume.err"; fail "changed tokenizer message"; }
    # Bad input: Janus-Pro's checkpoint under Chameleon's config, a tokenizer of another kind: exit 2, one line
    # naming the file, nothing written.
    printf '{"model": {"type": "WordPiece", "vocab": {"a": 0}}}\n' > "$work/wordpiece.json"
    for bad in "s|$work/chameleon/model.safetensors|$work/janus/model.safetensors|:janus/model.safetensors.index.json: tensor" \
               "s|$work/chameleon_tokenizer/tokenizer.json|$work/wordpiece.json|:wordpiece.json: model.type"; do
      sed -e "${bad%%:*}" "$work/$fam/model.yaml" > "$work/$fam/bad.yaml"
      sed -e "s|$work/$fam/model.yaml|$work/$fam/bad.yaml|" -e "s|/greedy_ar$|/bad_out|" "$work/$fam/greedy_ar.yaml" > "$work/bad_job.yaml"
      rc=0
      "$vispec" run "$work/bad_job.yaml" > "$work/bad.out" 2> "$work/bad.err" || rc=$?
      [ "$rc" = 2 ] || { cat "$work/bad.err"; fail "bad input '${bad#*:}': exit $rc, not 2"; }
      grep -q "${bad#*:}" "$work/bad.err" || { cat "$work/bad.err"; fail "bad input message for '${bad#*:}'"; }
      [ "$(grep -c "error" "$work/bad.err")" = 1 ] || { cat "$work/bad.err"; fail "bad input: not one line"; }
      [ ! -e "$work/$fam/bad_out" ] || fail "bad input '${bad#*:}': its job wrote an output directory"
    done
  fi
  if [ "$fam" = emu3 ]; then  # MuLo-SD's drafter reads its own prompt: with the target's, other drafts are kept
    job "$fam" mulo_keep "name: mulo_sd, tau: 0, cfg_scale: 3.0, temperature: 0"
    "$vispec" run "$work/$fam/mulo_keep.yaml" >> "$work/$fam.log" 2>&1 || { cat "$work/$fam.log"; fail "$fam mulo tau 0"; }
    sed -e 's/, prompt: {template:.*}}$/}}/' "$work/$fam/model.yaml" > "$work/$fam/model_same_prompt.yaml"
    grep -q "2\*2" "$work/$fam/model_same_prompt.yaml" && fail "emu3: the drafter's prompt was not taken out"
    sed -e "s|$work/$fam/model.yaml|$work/$fam/model_same_prompt.yaml|" -e "s|/mulo_keep$|/mulo_same|" \
      "$work/$fam/mulo_keep.yaml" > "$work/$fam/mulo_same.yaml"
    "$vispec" run "$work/$fam/mulo_same.yaml" >> "$work/$fam.log" 2>&1 || { cat "$work/$fam.log"; fail "$fam mulo same"; }
    if diff -r "$work/$fam/mulo_keep/tokens" "$work/$fam/mulo_same/tokens" > /dev/null; then
      fail "emu3: MuLo-SD's drafts do not depend on the drafter's own prompt"
    fi
  fi
  echo "$fam: distilled, heads trained, eagle2 / eagle1 / adt_tree / lantern / ssd / sd / mulo_sd (tau > 1) at" \
       "T = 0 equal AR, coolsd / lanternpp / sjd / zipar / sd / mulo_sd generate"
done
