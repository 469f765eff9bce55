#!/usr/bin/env bash
# scripts/gpu_check.sh --cpu on this build: the same steps the GPU machine runs (configure, build, tests, the
# demo in fp32 and bf16, vispec step-cost, the summary), here without CUDA and with a few quick tests and a
# small step-cost, so that the script cannot rot between the rare runs on a GPU machine.
set -euo pipefail
py=${VISPEC_TEST_PYTHON:-/usr/bin/python3}
build=$1 src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bash "$src/scripts/gpu_check.sh" --cpu --build-dir "$build" --tests '^Sampler\.|^Devices\.HalfPrecision' \
  --step-cost-args "--batches 1 --xl-layers 1 --xl-grid 4" "$work/out" > "$work/log" 2>&1 \
  || { cat "$work/log"; echo "FAIL: gpu_check.sh --cpu"; exit 1; }
"$py" - "$work/out" <<'PY'
import json, sys
out = sys.argv[1]
s = json.load(open(f"{out}/summary.json"))
assert s["mode"] == "cpu" and s["failed"] == 0, s
for step in ["configure", "build", "tests", "demo_fp32", "demo_bf16", "step_cost"]:
    assert s["steps"][step]["exit"] == 0, (step, s["steps"])
assert "100% tests passed" in s["tests"], s["tests"]
for demo, dtype in [("demo_fp32", "fp32"), ("demo_bf16", "bf16")]:
    d = s[demo]
    assert d["images"] == 40 and d["complete"] and d["device"] == "cpu" and d["dtype"] == dtype, d
rows = s["step_cost"]["rows"]
assert {(r["model"].split()[0], r["dtype"]) for r in rows} == {(m, t) for m in ["embedded", "GPT-XL"] for t in ["fp32", "bf16"]}, rows
assert all(r["ms_per_token"] > 0 and r["floor_ms"] > 0 and r["ratio"] > 0 for r in rows), rows
assert open(f"{out}/step-cost-cpu.md").read().startswith("Device cpu"), "markdown"
assert "===== tests.log =====" in open(f"{out}/logs.txt").read()
print("ok: gpu_check.sh --cpu:", s["tests"], "; steps", {k: v["seconds"] for k, v in s["steps"].items()})
PY
