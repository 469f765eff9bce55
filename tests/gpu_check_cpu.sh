#!/usr/bin/env bash
# scripts/gpu_check.sh --cpu --quick on this build's binaries: the steps the GPU machine runs with --quick (the
# dependency decisions, the binaries' start check, the CUDA test cases (skipped here, visibly), vispec step-cost,
# the gpu-quick bench at batch 1, 8 and 32, the demo in fp32, bf16 and on 2 CPU threads, the summary and its
# figures against the GPU-speed targets), here without CUDA and at small sizes (the bench on one prompt with SSD
# alone, its own baseline: every run of a bench also loads the models and the quality judge's 10,000 reference
# images, ~25 s here; step-cost with a 1-layer GPT-XL, 8 steps; the break-even table of every decoder on a 1-layer
# GPT-B-wide shape of 6x6 tokens at batches 1 and 2), so that the script cannot rot between the rare runs on a GPU
# machine. --binaries: it never builds (2 cores), and it reads the build as it is.
#   bash tests/gpu_check_cpu.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
py=${VISPEC_TEST_PYTHON:-/usr/bin/python3}
build=$1 src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Every decoder of bench/gpu-quick.yaml parses (the GPU machine runs them all): a bench file is checked whole
# before any work, decoders before the baseline, so an unknown baseline fails on the baseline alone.
"$build/vispec" bench "$src/bench/gpu-quick.yaml" --set baseline=none-such > "$work/parse" 2>&1 && exit 1
grep -q "'none-such' is not the label of a decoder" "$work/parse" || { cat "$work/parse"; echo "FAIL: gpu-quick.yaml"; exit 1; }
# The break-even table names its decoders: an unknown one is refused before any work, naming the known ones.
"$build/vispec" step-cost --decoders eagle2,none-such --results "$work/refused" > "$work/refused.log" 2>&1 && exit 1
grep -q "unknown decoder 'none-such' (known: all, " "$work/refused.log" && [ ! -e "$work/refused" ] \
  || { cat "$work/refused.log"; echo "FAIL: step-cost --decoders none-such"; exit 1; }
printf 't-shirt/top\n' > "$work/prompts.txt"
bash "$src/scripts/gpu_check.sh" --cpu --quick --binaries "$build" --deadline 780 \
  --step-cost-args "--dtypes fp32,bf16 --batches 1,32 --modes graphs --xl-layers 1 --xl-grid 4 --max-steps 8" \
  --break-even-args "--dtypes fp32 --batches 1,2 --xl-preset GPT-B --xl-layers 1 --xl-grid 6 --xl-vocab 512 --mal-samples 3" \
  --throughput-args "--dtypes fp32 --batches 2,auto --auto-batch-limit 3 --xl-preset GPT-B --xl-layers 1 --xl-grid 6 --xl-vocab 512 --mal-samples 3" \
  --bench-set "prompts=$work/prompts.txt" \
  --bench-set "decoders=[{label: ssd-r2, decoder: {name: ssd, cfg_scale: 2.0, r: 2}}]" --bench-set baseline=ssd-r2 \
  --also '"$VISPEC" decoders > /dev/null && echo "also ran on $VISPEC_DEVICE"' \
  "$work/out" > "$work/log" 2>&1 || { cat "$work/log"; echo "FAIL: gpu_check.sh --cpu --quick"; exit 1; }
"$py" - "$work/out" <<'PY'
import json, sys
out = sys.argv[1]
s = json.load(open(f"{out}/summary.json"))
assert s["mode"] == "cpu" and s["quick"] and s["failed"] == 0, s
assert s["binaries"] in ("carried", "prebuilt"), (s["binaries"], s["binaries_reason"])
every = {"mpi", "hdf5", "spdlog", "fmt", "yaml-cpp", "nlohmann-json", "cli11", "gtest", "png", "jpeg", "zlib",
         "sentencepiece", "pcre2", "utf8proc", "fashion-mnist"}
assert set(s["deps"]) == every and set(s["deps"].values()) <= {"machine", "prefix"}, s["deps"]
assert s["libs"] and "missing" not in s["libs"].values(), s["libs"]
for step in ["binaries", "cuda_tests", "step_cost", "break_even", "throughput", "step_profile", "bench_b1", "bench_b8", "bench_b32", "demo_fp32",
             "demo_bf16", "demo_cpu"]:
    assert s["steps"][step]["exit"] == 0, (step, s["steps"])
assert "configure" not in s["steps"] and "build" not in s["steps"], s["steps"]
assert "PASSED" in s["tests"] and "FAILED" not in s["tests"], s["tests"]
assert s["graph_fallbacks"] == {}, s["graph_fallbacks"]  # a CPU captures no graph, so none falls back
# compute-sanitizer's memcheck of the kernels runs on a GPU only: here it says why it did not run, unfailed.
assert s["memcheck"] == "not run: no GPU (--cpu)" and s["steps"]["memcheck"]["skipped"], (s["memcheck"], s["steps"])
for demo, dtype in [("demo_fp32", "fp32"), ("demo_bf16", "bf16"), ("demo_cpu", "fp32")]:
    d = s[demo]
    assert d["images"] == 40 and d["complete"] and d["device"] == "cpu" and d["dtype"] == dtype, d
rows = s["step_cost"]["rows"]
assert {(r["model"].split()[0], r["dtype"]) for r in rows} == {(m, t) for m in ["embedded", "GPT-XL"] for t in ["fp32", "bf16"]}, rows
assert all(r["ms_per_token"] > 0 and r["floor_ms"] > 0 and r["ratio"] > 0 for r in rows), rows
# What the host dispatches per step: eager steps issue operators; a bf16 step casts at least its logits to
# float32 (the fused operators keep the other float32 islands inside their kernels), an fp32 step need not cast.
assert all(r["ops_per_step"] > 0 for r in rows), rows
assert all(r["conversions_per_step"] >= (1 if r["dtype"] == "bf16" else 0) for r in rows), rows
assert open(f"{out}/step-cost-cpu.md").read().startswith("Device cpu"), "markdown"
# The break-even table: every decoder at both batches on the cut shape, AR first at each (its own break-even 1),
# each iteration timed against AR's step in the same run, and the projection from the embedded model's MAL over 3
# samples (per batch: chunks of the batch, each waiting for its slowest row, so never above the per-row MAL).
be = s["break_even"]
assert be["shape"].startswith("GPT-B (1 of its 12 layers, dim 768") and "6x6 grid (36 tokens), vocabulary 512" in be["shape"], be["shape"]
assert not be["shape_real"] and not be["graphs"] and be["mal_samples"] == 3 and be["tokens"] == 36, be
every = {"ar", "sd", "eagle2", "lantern", "adt_tree", "eagle1", "lanternpp", "coolsd", "ssd", "sjd", "scd", "gsd", "sjd_pac", "zipar", "mulo_sd"}
for batch in (1, 2):
    rows = [r for r in be["rows"] if r["batch"] == batch]
    assert [r["decoder"] for r in rows][0] == "ar" and {r["decoder"] for r in rows} == every, rows
    for r in rows:
        assert "error" not in r and r["dtype"] == "fp32" and r["rows"] == 2 * batch, r
        assert r["ms_per_iteration"] > 0 and r["ar_ms_per_step"] == rows[0]["ms_per_iteration"], r
        assert abs(r["break_even_mal"] - r["ms_per_iteration"] / r["ar_ms_per_step"]) < 1e-9, r
        assert abs(r["projected_speedup"] - r["embedded_batch_mal"] / r["break_even_mal"]) < 1e-9, r
        assert 1 <= r["iterations"] <= 36 and r["embedded_batch_mal"] <= r["embedded_mal"] + 1e-9, r
        assert r["embedded_mal"] >= 1 and (r["embedded_mal"] > 1) == (r["decoder"] != "ar"), r
    assert rows[0]["break_even_mal"] == 1 and rows[0]["iterations"] == 36 and rows[0]["mal_random"] == 1, rows[0]
    # What each iteration launches besides its forwards (the embedded model's eager decode): AR and MuLo-SD run no
    # DecodeState iterations (vispec::iteration), the others do.
    assert all((r["kernel_ops_per_iteration"] is None) == (r["decoder"] in ("ar", "mulo_sd")) for r in rows), rows
    assert all(r["kernel_ops_per_iteration"] is None or r["kernel_ops_per_iteration"] > 0 for r in rows), rows
# The throughput table: AR and the four decoders at batch 2 and at auto (the largest batch that fits, here capped
# at 3), each one's images per second measured; AR's beside its bandwidth floor, the others' projected from AR's.
tp = s["throughput"]
assert tp["bandwidth_gb_s"] > 0 and not tp["shape_real"], tp
rows = tp["rows"]
assert [(r["batch"], r["batch_auto"], r["decoder"]) for r in rows] == \
    [(b, a, d) for b, a in ((2, False), (3, True)) for d in ("ar", "sd", "sjd", "ssd", "eagle2")], rows
for r in rows:
    assert "error" not in r and r["images_per_s"] > 0, r
    assert abs(r["images_per_s"] - r["batch"] / r["seconds"]) <= 1e-9 * r["images_per_s"], r
    ar = next(x for x in rows if x["decoder"] == "ar" and x["batch"] == r["batch"])
    assert abs(r["projected_images_per_s"] - ar["images_per_s"] * r["projected_speedup"]) <= 1e-9 * r["projected_images_per_s"], r
    assert ("of_floor" in r) == (r["decoder"] == "ar"), r
    if r["decoder"] == "ar":
        assert r["floor_images_per_s"] > 0 and abs(r["of_floor"] - r["images_per_s"] / r["floor_images_per_s"]) <= 1e-9, r
# The kernel profile (on a CPU: the operators' times): every row profiled, its time per step split by class,
# the longest first, and the table in the markdown.
profiled = s["step_profile"]["rows"]
assert {r["model"].split()[0] for r in profiled} == {"embedded", "GPT-XL"} and all(r["dtype"] == "bf16" for r in profiled), profiled
for r in profiled:
    p = r["profile"]
    assert p["steps"] == 16 and not p["device_kernels"] and p["us_per_step"] > 0 and p["launches_per_step"] > 0, p
    top = [k["us"] for k in p["top"]]
    assert 0 < len(top) <= 12 and top == sorted(top, reverse=True), p["top"]
    assert abs(sum(p["classes"].values()) - p["us_per_step"]) < 1e-6 * p["us_per_step"] + 1e-9, p
assert "## Device time per step, by kernel" in open(f"{out}/step-profile-cpu.md").read(), "profile markdown"
for key, batch, images in [("batch_1", 1, 1), ("batch_8", 8, 1), ("batch_32", 32, 1)]:  # 4 a prompt on a GPU
    b = s["bench"][key]
    assert b["name"] == "gpu-quick" and b["batch_size"] == batch and b["images_per_decoder"] == images, b
    assert b["device"] == "cpu" and [d["label"] for d in b["decoders"]] == ["ssd-r2"], b["decoders"]
    assert b["decoders"][0]["images_per_s"] > 0 and b["decoders"][0]["mean_accepted_length"] > 1, b["decoders"]
assert [f"# Batch {b}" in open(f"{out}/gpu-quick.md").read() for b in (1, 8, 32)] == [True] * 3, "gpu-quick.md"
# The figures beside the GPU-speed targets (scripts/gpu_figures.py), from this run's own measurements: AR's
# GPT-XL rows (here 1 layer, run eagerly), the demo over the same demo on 2 CPU threads, SSD as its own baseline
# at batch 8 (a speedup of 1: not faster), and null where this run measured nothing (no EAGLE-2, LANTERN, SD, SJD).
f = s["figures"]
targets = {t["what"].split(":")[0]: t for t in f["targets"]}
assert len(targets) == 8 + 7 + 2, f["targets"]  # the break-even MALs at batch 1 (batch 8 did not run), throughput
floor = targets["AR at its best batch, GPT-XL shape"]
best = max((r for r in rows if r["decoder"] == "ar"), key=lambda r: r["images_per_s"])
assert floor["value"] == best["of_floor"] and floor["value"] > 0, (floor, best)
assert floor["met"] is None, floor  # shown, not judged: not GPT-XL's whole shape on a GPU
spec = targets["the best lossless decoder at batch 32, projected images/s over AR's best batch's"]
assert spec["value"] is None and spec["met"] is None, spec  # no batch 32 here
assert f["throughput"]["rows"] and "Throughput:" in open(f"{out}/figures.md").read(), "figures: throughput"
for what in ["eagle2", "lantern", "adt_tree", "eagle1", "sd", "sjd", "ssd"]:
    t = targets[f"{what} at batch 1, break-even MAL on GPT-XL's shape"]
    assert t["value"] > 0 and t["met"] is None, t  # shown, not judged: not GPT-XL's whole shape on a GPU
for what in ["AR, GPT-XL shape, bf16, batch 1", "AR, GPT-XL shape, bf16, batch 32"]:
    assert targets[what]["value"] > 0 and targets[what]["met"] == (targets[what]["value"] <= float(targets[what]["target"][3:])), targets[what]
assert f["ar_gptxl_bf16"]["1"]["replayed"] is False and f["ar_gptxl_bf16"]["1"]["llamagen_compiled_over_this"] > 0, f["ar_gptxl_bf16"]
demo = targets["the demo on the GPU (its faster dtype) over the demo on 2 CPU threads"]
assert demo["value"] == max(f["demo_images_per_s"]["fp32"], f["demo_images_per_s"]["bf16"]) / f["demo_images_per_s"]["cpu"], demo
assert targets["ssd at batch 8"]["value"] == 1.0 and targets["ssd at batch 8"]["met"] is False, targets["ssd at batch 8"]
for what in ["eagle2 at batch 1", "lantern at batch 1", "sd at batch 8", "sjd at batch 8"]:
    assert targets[what]["value"] is None and targets[what]["met"] is None, targets[what]
ssd = f["decoders"]["32"]["decoders"][0]
assert ssd["label"] == "ssd-r2" and ssd["speedup_per_accepted_length"] == 1.0 / ssd["mean_accepted_length"], ssd
# Each demo split into its batches (two of 20: the first carries what a run does once).
for k in ["fp32", "bf16", "cpu"]:
    b = f["demo_batches"][k]
    assert [x["images"] for x in b["batches"]] == [20, 20] and b["first_ms"] > 0 and b["later_images_per_s"] > 0, b
figures_md = open(f"{out}/figures.md").read()
assert "| target | value | bound | met |" in figures_md, "figures.md"
assert "Break-even table: GPT-B (1 of its 12 layers" in figures_md and "| 2 | mulo_sd |" in figures_md, figures_md
logs = open(f"{out}/logs.txt").read()
assert "===== cuda_tests.log =====" in logs
# --also: the experiment ran as a step of its own, with the binaries and the device in its environment.
assert s["steps"]["also_1"]["exit"] == 0 and "also ran on cpu" in logs, s["steps"]
print("ok: gpu_check.sh --cpu --quick:", s["binaries"], "binaries;", s["tests"], "; steps",
      {k: v["seconds"] for k, v in s["steps"].items()})
PY
