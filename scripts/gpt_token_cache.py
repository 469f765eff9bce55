#!/usr/bin/env python3
"""Writes `vispec train gpt`'s token cache (RUN_DIR/tokens.safetensors) from a `vispec run` output directory:
its token grids and class ids as the training set, its first six as the test set. For quick training runs (the
data-parallel test and the throughput bench) that should not spend minutes tokenising Fashion-MNIST's 70,000
images. The safetensors format by its definition: an 8-byte header length, a JSON header, the raw data.
    python3 scripts/gpt_token_cache.py OUT DEST.safetensors"""
import json
import struct
import sys

import numpy as np

out, dst = sys.argv[1], sys.argv[2]
rows = [json.loads(line) for line in open(f"{out}/metrics.jsonl")]
tokens = np.stack([np.load(f"{out}/tokens/{r['sample_id']:08d}.npy").reshape(-1) for r in rows]).astype(np.int32)
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
