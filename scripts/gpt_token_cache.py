#!/usr/bin/env python3
"""Writes `vispec train gpt`'s token cache (RUN_DIR/tokens.safetensors) from a `vispec run` output directory:
its token grids and class ids as the training set, its first six as the test set. For quick training runs (the
data-parallel test and the throughput bench) that should not spend minutes tokenising Fashion-MNIST's 70,000
images. The safetensors format by its definition: an 8-byte header length, a JSON header, the raw data.
    python3 scripts/gpt_token_cache.py OUT DEST.safetensors [--crop N]
--crop N keeps each grid's top-left N x N tokens: a cache for `train gpt --mulo`, whose half-resolution GPT
reads an 8x8 grid (valid tokens of the same VQ; for tests of the trainer, not for a model worth keeping)."""
import argparse
import json
import struct

import numpy as np

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("out")
parser.add_argument("dst")
parser.add_argument("--crop", type=int, help="keep each grid's top-left N x N tokens")
args = parser.parse_args()
out, dst = args.out, args.dst
rows = [json.loads(line) for line in open(f"{out}/metrics.jsonl")]
grids = [np.load(f"{out}/tokens/{r['sample_id']:08d}.npy") for r in rows]
if args.crop is not None:
    grids = [g[:args.crop, :args.crop] for g in grids]
tokens = np.stack([g.reshape(-1) for g in grids]).astype(np.int32)
labels = np.array([r["class_id"] for r in rows], np.int64)
header, data = {}, b""
for name, a, dtype in (("train_tokens", tokens, "I32"), ("train_labels", labels, "I64"),
                       ("test_tokens", tokens[:6], "I32"), ("test_labels", labels[:6], "I64")):
    raw = a.tobytes()
    header[name] = {"dtype": dtype, "shape": list(a.shape), "data_offsets": [len(data), len(data) + len(raw)]}
    data += raw
h = json.dumps(header).encode()
h += b" " * (-len(h) % 8)
open(dst, "wb").write(struct.pack("<Q", len(h)) + h + data)
