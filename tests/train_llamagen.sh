#!/usr/bin/env bash
# The trainers on a LlamaGen-family model (the tiny class-conditional GPT and VQ-16 of ../shared/fixtures/llamagen,
# 8x8 tokens of 128 px images), from an image folder in ImageNet's layout made here and from code files in the
# layout of LlamaGen's extract_codes_c2i.py:
#   1. `train gpt --images` trains the target, `--drafter` SD's draft GPT and `--mulo` MuLo-SD's half-resolution
#      GPT, and `train mulo-resamplers --images` U_2 / D_2, through the fixture VQ (which carries LlamaGen's
#      codebook-usage buffer); images of other sizes and gray ones are cropped and resized as LlamaGen does;
#      under mpirun -np 2 the ranks share the tokenising and make the same token cache;
#   2. `vispec run` decodes with the trained drafters: SD's greedy tokens are AR's (lossless), MuLo-SD's with tau
#      above 1 too (every draft rejected), and both sample at T = 1;
#   3. `train gpt --codes` reads LlamaGen's code files, every augmentation a sequence; a folder of JPEG files
#      (RGB, gray and CMYK, as ImageNet's) gives the tokens of the same images decoded by PIL and saved as PNG;
#   4. bad input is one line and exit 2, with nothing written or deleted: a file that is not an image, or not the
#      image its name says, in a class folder, a token cache of a code folder that changed since, a token cache
#      of another folder, code files of another grid, `train vq` on a model whose images are not Fashion-MNIST's.
set -euo pipefail
vispec=$1 src=$2
torch_py=${VISPEC_TORCH_PYTHON:?the virtual environment python (numpy, Pillow, safetensors)}
fixtures=$src/../shared/fixtures/llamagen
[ -d "$fixtures" ] || { echo "SKIP: no $fixtures"; exit 0; }
fixtures=$(cd "$fixtures" && pwd)
work=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
cd "$work"

# Two classes of six images: 128 px RGB, one 200x150 (cropped and resized to 128) and one gray per class.
"$torch_py" - <<'PY'
import os
import numpy as np
from PIL import Image
rng = np.random.default_rng(0)
for c, name in enumerate(["n01_cat", "n02_dog"]):
    os.makedirs(f"images/{name}")
    for i in range(6):
        h, w = (150, 200) if i == 0 else (128, 128)
        yy, xx = np.mgrid[0:h, 0:w]
        rgb = np.stack([(xx * (c + 1) + 10 * i) % 256, (2 * yy) % 256, np.full((h, w), 80 * c + 20 * i)], -1)
        img = (rgb + rng.integers(0, 20, (h, w, 3))).clip(0, 255).astype(np.uint8)
        Image.fromarray(img[:, :, 0] if i == 4 else img).save(f"images/{name}/{i:03d}.png")
# JPEG files of other sizes, and the same images as PIL decodes them (what LlamaGen's ImageFolder reads), as PNG.
for c, name in enumerate(["a", "b"]):
    os.makedirs(f"jpegs/{name}"), os.makedirs(f"jpegs_png/{name}")
    for i, mode in enumerate(["RGB", "L", "CMYK", "RGB"]):
        h, w = 140 + 10 * i, 170 - 5 * i
        yy, xx = np.mgrid[0:h, 0:w]
        rgb = np.stack([(3 * xx + 40 * c) % 256, (yy + 30 * i) % 256, (xx + yy) % 256], -1).astype(np.uint8)
        Image.fromarray(rgb).convert(mode).save(f"jpegs/{name}/{i}.JPEG", quality=90)
        Image.open(f"jpegs/{name}/{i}.JPEG").convert("RGB").save(f"jpegs_png/{name}/{i}.png")
PY
cat > model.yaml <<YAML
name: llamagen-fixture-c2i
gpt: {weights: $fixtures/c2i_gpt.safetensors, vocab_size: 256, dim: 64, n_layer: 2, n_head: 4, multiple_of: 32, grid_size: 8, num_classes: 10, cls_token_num: 1}
vq: {weights: $fixtures/vq.safetensors, codebook_size: 256, codebook_embed_dim: 8, ch: 32, ch_mult: [1, 1, 2, 2, 4], z_channels: 32, num_res_blocks: 2, norm_groups: 32}
drafters:
  gpt: {weights: draft_gpt.safetensors, dim: 32, n_layer: 1, n_head: 2, multiple_of: 32}
  mulo:
    gpt: {weights: mulo_gpt.safetensors}
    resamplers: {weights: mulo_resamplers.safetensors, width: 32, blocks: 1}
YAML
train() { "$vispec" train "$@" --config model.yaml --steps 4 --batch-size 4 --threads 1 --log-every 2 --checkpoint-every 4 >> train.log 2>&1 || { cat train.log; fail "train $*"; }; }

# 1. The four trainings from the folder.
train gpt --images images --out target
train gpt --images images --drafter --out draft --export draft_gpt.safetensors
train gpt --images images --mulo --out mulo --export mulo_gpt.safetensors
train mulo-resamplers --images images --out resamplers --export mulo_resamplers.safetensors
grep -q "tokenising 12 images of 2 classes" train.log || fail "the folder's 12 images were not tokenised"
# Under mpirun -np 2 each rank tokenises half of the folder: the same token cache, and no part file left.
OMP_NUM_THREADS=1 mpirun --allow-run-as-root --oversubscribe -np 2 "$vispec" train gpt --config model.yaml \
  --images images --out target_np2 --steps 2 --batch-size 4 --threads 1 >> train.log 2>&1 || { cat train.log; fail "-np 2"; }
[ -z "$(ls target_np2 | grep part)" ] || fail "part files left: $(ls target_np2)"
"$torch_py" - <<'PY' || fail "token caches"
from safetensors.numpy import load_file
full, half = load_file("target/tokens.safetensors"), load_file("mulo/tokens.safetensors")
two = load_file("target_np2/tokens.safetensors")
assert all((two[k] == full[k]).all() for k in full), "tokenised on two ranks, the cache differs"
# Every tenth image held out: 11 train sequences, 1 test; 64 tokens at 128 px, 16 at 64 px.
assert full["train_tokens"].shape == (11, 64) and full["test_tokens"].shape == (1, 64), full["train_tokens"].shape
assert half["train_tokens"].shape == (11, 16), half["train_tokens"].shape
assert sorted(set(full["train_labels"].tolist())) == [0, 1] and full["test_labels"].tolist() == [1]
assert (full["train_tokens"] >= 0).all() and (full["train_tokens"] < 256).all()
assert len({bytes(t) for t in full["train_tokens"]}) == 11, "images tokenised alike"
r = load_file("resamplers/train_tokens.safetensors")
assert r["high"].shape == (11, 64) and r["low"].shape == (11, 16), (r["high"].shape, r["low"].shape)
PY

# 2. Decoding with them.
printf '3\n7\n' > prompts.txt
job() {  # job NAME DECODER
  printf 'model: model.yaml\nprompts: prompts.txt\ndecoder: {%s}\nimages_per_prompt: 2\nseed: 0\nbatch_size: 4\nthreads: 1\ndevice: cpu\nout: %s\n' "$2" "$1" > "$1.yaml"
  "$vispec" run "$1.yaml" >> run.log 2>&1 || { cat run.log; fail "run $1"; }
  [ "$(ls "$1/tokens" | wc -l)" = 4 ] || fail "$1: not 4 images"
}
job ar "name: ar, cfg_scale: 4.0, temperature: 0"
job sd "name: sd, gamma: 3, cfg_scale: 4.0, temperature: 0"
job mulo_reject "name: mulo_sd, tau: 1.5, cfg_scale: 4.0, temperature: 0"
diff -r ar/tokens sd/tokens > /dev/null || fail "SD with the trained draft GPT: greedy tokens differ from AR's"
diff -r ar/tokens mulo_reject/tokens > /dev/null || fail "MuLo-SD rejecting every draft: tokens differ from AR's"
job sd_sampled "name: sd, gamma: 3, cfg_scale: 4.0, temperature: 1.0"
job mulo_sampled "name: mulo_sd, tau: 0.0, cfg_scale: 4.0, temperature: 1.0"

# 3. LlamaGen's code files: 12 images, two augmentations each (an image and its flip), of the 8x8 grid.
"$torch_py" - <<'PY'
import os
import numpy as np
rng = np.random.default_rng(1)
for d in ["codes/imagenet128_codes", "codes/imagenet128_labels", "wrong/imagenet128_codes", "wrong/imagenet128_labels"]:
    os.makedirs(d)
for i in range(12):
    np.save(f"codes/imagenet128_codes/{i}.npy", rng.integers(0, 256, (1, 2, 64)))
    np.save(f"codes/imagenet128_labels/{i}.npy", np.array([i % 3]))
    np.save(f"wrong/imagenet128_codes/{i}.npy", rng.integers(0, 256, (1, 2, 256)))  # a 16x16 grid
    np.save(f"wrong/imagenet128_labels/{i}.npy", np.array([0]))
PY
"$vispec" train gpt --codes codes --out from_codes --config model.yaml --steps 4 --batch-size 4 --threads 2 \
  --log-every 2 --checkpoint-every 4 >> train.log 2>&1 || { cat train.log; fail "train gpt --codes"; }
"$torch_py" - <<'PY' || fail "code files"
import numpy as np
from safetensors.numpy import load_file
t = load_file("from_codes/tokens.safetensors")
assert t["train_tokens"].shape == (22, 64) and t["test_tokens"].shape == (2, 64), t["train_tokens"].shape
# Every file in its place (read on two threads): 0 .. 11 without the held-out 9, then 9.
files = [np.load(f"codes/imagenet128_codes/{i}.npy").reshape(2, 64) for i in range(12)]
train_files = [i for i in range(12) if i != 9]
assert (t["train_tokens"] == np.concatenate([files[i] for i in train_files])).all()
assert (t["test_tokens"] == files[9]).all()
assert t["train_labels"].tolist() == [i % 3 for i in train_files for _ in range(2)], t["train_labels"]
PY

# JPEG files read as PIL reads them: the same tokens as their PIL-decoded PNG copies.
train gpt --images jpegs --out from_jpeg
train gpt --images jpegs_png --out from_png
"$torch_py" - <<'PY' || fail "JPEG files are not read as PIL reads them"
from safetensors.numpy import load_file
jpeg, png = load_file("from_jpeg/tokens.safetensors"), load_file("from_png/tokens.safetensors")
assert jpeg["train_tokens"].shape == (8, 64), jpeg["train_tokens"].shape
assert (jpeg["train_tokens"] == png["train_tokens"]).all(), (jpeg["train_tokens"] != png["train_tokens"]).sum()
PY

# 4. Bad input: one line, exit 2, nothing written or deleted.
refused() {  # refused WHAT PATTERN COMMAND...: exit 2 and one error line matching PATTERN
  local what=$1 pattern=$2 rc=0
  shift 2
  "$@" > out.txt 2> err.txt || rc=$?
  [ "$rc" = 2 ] || { cat err.txt; fail "$what: exit $rc, not 2"; }
  [ "$(grep -c '^vispec: error: ' err.txt)" = 1 ] && grep '^vispec: error: ' err.txt | grep -q "$pattern" ||
    { cat err.txt; fail "$what: not one error line naming $pattern"; }
}
echo "a dog" > images/n02_dog/notes.txt
refused "a text file among the images" "images/n02_dog/notes.txt" "$vispec" train gpt --config model.yaml --images images --out notes --steps 1
[ ! -e notes/tokens.safetensors ] || fail "a refused folder left a token cache"
rm images/n02_dog/notes.txt
cp images/n01_cat/000.png images/n02_dog/photo.jpg
refused "a PNG named .jpg" "images/n02_dog/photo.jpg: not a readable JPEG" "$vispec" train gpt --config model.yaml --images images --out jpeg --steps 1
[ ! -e jpeg/tokens.safetensors ] || fail "a refused folder left a token cache"
rm images/n02_dog/photo.jpg
mkdir -p few/a && cp images/n01_cat/00[1-3].png few/a/
before=$(md5sum target/tokens.safetensors)
refused "another folder's cache" "target/tokens.safetensors" "$vispec" train gpt --config model.yaml --images few --out target --steps 8
[ "$(md5sum target/tokens.safetensors)" = "$before" ] || fail "a refused run changed the token cache"
cp codes/imagenet128_codes/0.npy codes/imagenet128_codes/12.npy && cp codes/imagenet128_labels/0.npy codes/imagenet128_labels/12.npy
refused "a code folder that changed" "from_codes/tokens.safetensors" "$vispec" train gpt --config model.yaml --codes codes --out from_codes --steps 8
refused "codes of another grid" "wrong/imagenet128_codes/0.npy" "$vispec" train gpt --config model.yaml --codes wrong --out wrong_run --steps 1
refused "train vq" "model.yaml" "$vispec" train vq --config model.yaml --out vq --steps 1
# Code files of another dtype than LlamaGen's integers (float features, bool, float labels): refused, not cast.
"$torch_py" - <<'PY'
import os
import numpy as np
for name, codes, label in [("float_codes", np.zeros((1, 2, 64), np.float32), np.array([0])),
                           ("bool_codes", np.zeros((1, 2, 64), bool), np.array([0])),
                           ("float_labels", np.zeros((1, 2, 64), np.int64), np.array([0.0]))]:
    for d in ("codes", "labels"):
        os.makedirs(f"{name}/imagenet128_{d}")
    for i in range(3):
        np.save(f"{name}/imagenet128_codes/{i}.npy", codes)
        np.save(f"{name}/imagenet128_labels/{i}.npy", label)
PY
refused "float codes" "float_codes/imagenet128_codes/0.npy: codes of dtype" "$vispec" train gpt --config model.yaml --codes float_codes --out float_codes_run --steps 1
refused "bool codes" "bool_codes/imagenet128_codes/0.npy" "$vispec" train gpt --config model.yaml --codes bool_codes --out bool_codes_run --steps 1
refused "float labels" "float_labels/imagenet128_labels/0.npy: a class of dtype" "$vispec" train gpt --config model.yaml --codes float_labels --out float_labels_run --steps 1
echo "train_llamagen: ok"
