#!/usr/bin/env python3
"""The GPU figures of one scripts/gpu_check.sh --quick run, each beside its target, from the run's summary.json.

    python3 scripts/gpu_figures.py OUT/summary.json [--demo-metrics DTYPE=METRICS.jsonl]...

Adds "figures" to the summary (rewritten whole, then renamed into place) and writes OUT/figures.md. Every figure
comes from what that one run measured side by side: AR's step on LlamaGen's GPT-XL shape (vispec step-cost), every
decoder's iteration against AR's step on that shape (the break-even table, vispec step-cost --decoders), images per
second at batches up to what the GPU holds against AR's bandwidth floor (the throughput table), the demo on
the GPU against the same demo on 2 CPU threads of the same machine, and the gpu-quick bench's decoders at batch 1, 8
and 32 against AR in the same bench. A target whose figure the run did not measure (a skipped step, a
CPU run without graphs) is listed with "met": null. With --demo-metrics (a demo run's metrics.jsonl), the demo's
time is also split into its batches: the first carries what a run does once (CUDA graph captures and their checks,
the fused kernels' checks, libraries loaded on first use), the others are the decode itself. The standard library
only: the GPU machine's python3 may have nothing else.
"""
import argparse
import json
import os

# The targets of "vispec at GPU speed, part 2" (docs/gpu.md, "The GPU check"). LlamaGen's own sampler compiled
# with torch.compile(mode="reduce-overhead") took 2.06 ms per GPT-XL token on an H200: the reference for 1.0 ms.
LLAMAGEN_COMPILED_MS = 2.06
AR_MS_PER_TOKEN = {1: 1.0, 32: 2.5}  # GPT-XL shape, bf16, replayed as CUDA graphs: at most
DEMO_OVER_CPU = 10.0                  # the embedded demo on the GPU: at least this many times its 2-core speed
TREE_SPEEDUP_PER_ACCEPTED = 0.6       # at batch 1: EAGLE-2's and LANTERN's speedup over AR, per accepted token
TREES = ("eagle2", "lantern")
FASTER_THAN_AR_AT_8 = ("sd", "sjd", "ssd")
# The break-even MAL (iteration / AR step, GPT-XL shape, bf16, replayed) each decoder must reach at most, by batch
# (docs/gpu.md, "Break-even table"); every other decoder at batch 8 at most BREAK_EVEN_AT_8; batch 32 is reported,
# with no target.
BREAK_EVEN_AT_1 = {"eagle2": 1.5, "lantern": 1.5, "adt_tree": 1.5, "eagle1": 1.5, "sd": 1.6, "sjd": 1.2, "ssd": 1.2}
BREAK_EVEN_AT_8 = 2.0
# Throughput on GPT-XL's shape (vispec step-cost --decoders, batches 8 .. 128 and auto): AR's best batch at least
# this share of its bandwidth floor in images per second, and at batch 32 a lossless decoder's projected images
# per second above AR's best (docs/gpu.md, "Throughput").
AR_OF_FLOOR = 0.6
LOSSLESS = ("sd", "sjd", "eagle1", "eagle2")


def preferred_dtype(rows):
    """The rows' bf16, else the dtype of their first (a table of one dtype)."""
    return "bf16" if any(r["dtype"] == "bf16" for r in rows) else rows[0]["dtype"] if rows else None


def judged_note(judged):
    """How a table's title ends: judged against the targets, or shown only."""
    return "." if judged else ", not judged against the targets: not LlamaGen's whole shape replayed on a GPU."


def ar_rows(summary):
    """GPT-XL shape, bf16, the graphs mode: {batch: row} (on a CPU the mode runs eagerly, and says so)."""
    step_cost = summary.get("step_cost") or {}
    return {r["batch"]: r for r in step_cost.get("rows", [])
            if r["model"].startswith("GPT-XL") and r["dtype"] == "bf16" and r["mode"] == "graphs"}


def demo_rate(summary, key):
    demo = summary.get(key)
    return demo["images_per_s"] if demo and demo.get("complete") else None


def bench_decoders(summary):
    """{batch: [{label, decoder, ms_per_image, speedup, mean_accepted_length, speedup_per_accepted_length}]}."""
    out = {}
    for key, bench in (summary.get("bench") or {}).items():
        if not bench:
            continue
        rows = []
        for d in bench["decoders"]:
            mal = d["mean_accepted_length"]
            rows.append({"label": d["label"], "decoder": d["decoder"], "ms_per_image": d["ms_per_image"],
                         "speedup": d["speedup"], "mean_accepted_length": mal,
                         "speedup_per_accepted_length": d["speedup"] / mal if mal > 0 else None,
                         "aten_ops_per_image": d["aten_ops_per_image"]})
        out[int(key.split("_")[1])] = {"batch_size": bench["batch_size"], "images": bench["images_per_decoder"],
                                       "baseline": bench["baseline"], "decoders": rows}
    return out


def break_even(summary):
    """The break-even table's bf16 rows (else its one dtype's) by batch: {batch: [row]} in the order measured, and
    whether they are judged: LlamaGen's whole GPT-XL shape replayed on a GPU (not a CPU's cut shape)."""
    table = summary.get("break_even") or {}
    rows = table.get("rows", [])
    dtype = preferred_dtype(rows)
    by_batch = {}
    for r in rows:
        if r["dtype"] == dtype:
            by_batch.setdefault(r["batch"], []).append(r)
    return by_batch, bool(table.get("shape_real")) and bool(table.get("graphs"))


def break_even_targets(by_batch, judged):
    """One target per decoder with a bound: batch 1 by BREAK_EVEN_AT_1, every decoder but AR at batch 8."""
    out = []
    bounds = [(1, name, bound) for name, bound in BREAK_EVEN_AT_1.items()]
    bounds += [(8, r["decoder"], BREAK_EVEN_AT_8) for r in by_batch.get(8, []) if r["decoder"] != "ar"]
    for batch, name, bound in bounds:
        found = [r for r in by_batch.get(batch, []) if r["decoder"] == name and "break_even_mal" in r]
        t = target(f"{name} at batch {batch}, break-even MAL on GPT-XL's shape: iteration / AR step",
                   found[0]["break_even_mal"] if found else None, bound, True)
        if not judged:
            t["met"] = None  # a CPU's cut shape, or no graphs: the value is shown, no target is judged
        out.append(t)
    return out


def throughput(summary):
    """The throughput table's rows (its bf16 ones, else its one dtype's), in the order measured, and whether they
    are judged (as the break-even table's)."""
    table = summary.get("throughput") or {}
    rows = [r for r in table.get("rows", []) if "error" not in r]
    dtype = preferred_dtype(rows)
    return [r for r in rows if r["dtype"] == dtype], bool(table.get("shape_real")) and bool(table.get("graphs"))


def throughput_targets(rows, judged):
    """AR's best batch against its floor; at batch 32 the best lossless decoder's projection against AR's best."""
    ar = [r for r in rows if r["decoder"] == "ar" and "of_floor" in r]
    best = max(ar, key=lambda r: r["images_per_s"]) if ar else None
    t_floor = target("AR at its best batch, GPT-XL shape: images/s over the bandwidth floor's",
                     best["of_floor"] if best else None, AR_OF_FLOOR, False)
    lossless = [r for r in rows if r["batch"] == 32 and r["decoder"] in LOSSLESS]
    top = max(lossless, key=lambda r: r["projected_images_per_s"]) if lossless else None
    t_spec = target("the best lossless decoder at batch 32, projected images/s over AR's best batch's"
                    + (f" ({top['decoder']})" if top else ""),
                    top["projected_images_per_s"] / best["images_per_s"] if top and best else None, 1.0, False)
    t_spec["target"], t_spec["met"] = "> 1", None if t_spec["value"] is None else t_spec["value"] > 1.0
    for t in (t_floor, t_spec):
        if not judged:
            t["met"] = None
    return [t_floor, t_spec]


def demo_batches(path):
    """A demo's batches in order, from its metrics.jsonl: each sample's wall_ms is its batch's time over the batch's
    size, so a batch is a run of consecutive samples of one unit with the same wall_ms."""
    batches = []
    key = None
    with open(path) as f:
        for line in f:
            row = json.loads(line)
            if (row["unit"], row["wall_ms"]) != key:
                key = (row["unit"], row["wall_ms"])
                batches.append({"images": 0, "ms": 0.0})
            batches[-1]["images"] += 1
            batches[-1]["ms"] += row["wall_ms"]
    later = batches[1:]
    return {"batches": batches, "first_ms": batches[0]["ms"] if batches else None,
            "later_images_per_s": (sum(b["images"] for b in later) / (sum(b["ms"] for b in later) / 1e3)
                                   if later and sum(b["ms"] for b in later) > 0 else None)}


def target(what, value, bound, at_most):
    met = None if value is None else (value <= bound if at_most else value >= bound)
    return {"what": what, "value": value, "target": ("<= " if at_most else ">= ") + f"{bound:g}", "met": met}


def figures(summary, demo_metrics):
    ar = ar_rows(summary)
    demo = {k: demo_rate(summary, "demo_" + k) for k in ("fp32", "bf16", "cpu")}
    fastest = max([v for k, v in demo.items() if k != "cpu" and v] or [0]) or None
    over_cpu = fastest / demo["cpu"] if fastest and demo["cpu"] else None
    decoders = bench_decoders(summary)
    by_batch, judged = break_even(summary)
    targets = []
    for batch, bound in AR_MS_PER_TOKEN.items():
        row = ar.get(batch)  # step-cost's batch counts images (twice as many rows under guidance)
        targets.append(target(f"AR, GPT-XL shape, bf16, batch {batch}: ms per token", row and row["ms_per_token"],
                              bound, True))
    targets.append(target("the demo on the GPU (its faster dtype) over the demo on 2 CPU threads", over_cpu,
                          DEMO_OVER_CPU, False))
    at_1 = decoders.get(1, {}).get("decoders", [])
    for name in TREES:
        found = [d for d in at_1 if d["decoder"] == name]
        targets.append(target(f"{name} at batch 1: speedup over AR per mean accepted length",
                              found[0]["speedup_per_accepted_length"] if found else None,
                              TREE_SPEEDUP_PER_ACCEPTED, False))
    at_8 = decoders.get(8, {}).get("decoders", [])
    for name in FASTER_THAN_AR_AT_8:
        found = [d for d in at_8 if d["decoder"] == name]
        value = found[0]["speedup"] if found else None
        t = target(f"{name} at batch 8: speedup over AR", value, 1.0, False)
        t["target"], t["met"] = "> 1", None if value is None else value > 1.0
        targets.append(t)
    targets += break_even_targets(by_batch, judged)
    flow, flow_judged = throughput(summary)
    targets += throughput_targets(flow, flow_judged)
    return {
        "ar_gptxl_bf16": {str(b): {"ms_per_token": r["ms_per_token"], "replayed": r["graphs_replayed"],
                                   "floor_ms": r["floor_ms"], "over_floor": r["ratio"],
                                   "llamagen_compiled_over_this": LLAMAGEN_COMPILED_MS / r["ms_per_token"]}
                          for b, r in sorted(ar.items())},
        "demo_images_per_s": demo,
        "demo_over_cpu": over_cpu,
        "demo_batches": {k: demo_batches(path) for k, path in demo_metrics.items() if os.path.isfile(path)},
        "decoders": {str(b): v for b, v in sorted(decoders.items())},
        "break_even": {"shape": (summary.get("break_even") or {}).get("shape"), "judged": judged,
                       "batches": {str(b): rows for b, rows in sorted(by_batch.items())}},
        "throughput": {"shape": (summary.get("throughput") or {}).get("shape"), "judged": flow_judged,
                       "rows": [{k: r.get(k) for k in ("batch", "batch_auto", "decoder", "images_per_s",
                                                        "projected_images_per_s", "floor_images_per_s", "of_floor",
                                                        "break_even_mal", "embedded_batch_mal")} for r in flow]},
        "targets": targets,
    }


def fmt(v, digits=3):
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "NO"
    return f"{v:.{digits}f}" if isinstance(v, float) else str(v)


def markdown(summary, f):
    machine = summary.get("gpu") or summary.get("mode")
    lines = [f"# GPU figures: {machine}, binaries {summary.get('binaries_commit') or '?'}", "",
             "Measured by one `scripts/gpu_check.sh --quick` run (its summary.json, \"figures\").", "",
             "| target | value | bound | met |", "| --- | ---: | ---: | --- |"]
    lines += [f"| {t['what']} | {fmt(t['value'])} | {t['target']} | "
              f"{'not measured' if t['met'] is None else fmt(t['met'])} |" for t in f["targets"]]
    lines += ["", "AR per token, GPT-XL shape, bf16, graphs (LlamaGen compiled: 2.06 ms on an H200):", "",
              "| batch | ms per token | replayed | over the floor | LlamaGen compiled / this |",
              "| ---: | ---: | --- | ---: | ---: |"]
    lines += [f"| {b} | {fmt(r['ms_per_token'])} | {fmt(r['replayed'])} | {fmt(r['over_floor'], 1)} | "
              f"{fmt(r['llamagen_compiled_over_this'], 2)} |" for b, r in f["ar_gptxl_bf16"].items()]
    demo = f["demo_images_per_s"]
    lines += ["", f"Demo (40 images), images/s: fp32 {fmt(demo['fp32'], 1)}, bf16 {fmt(demo['bf16'], 1)}, "
              f"2 CPU threads {fmt(demo['cpu'], 1)}: the GPU {fmt(f['demo_over_cpu'], 1)}x the CPU.", ""]
    for k, d in f["demo_batches"].items():
        lines += [f"Demo {k}, by batch: the first {fmt(d['first_ms'], 1)} ms, then "
                  f"{', '.join(fmt(b['ms'], 1) for b in d['batches'][1:]) or 'none'} ms "
                  f"({fmt(d['later_images_per_s'], 1)} images/s after the first)."]
    lines.append("")
    be = f["break_even"]
    if be["batches"]:
        lines += [f"Break-even table: {be['shape']}, random weights (vispec step-cost --decoders; bench/break_even.h). "
                  "A decoder beats AR where its mean accepted length exceeds its break-even MAL; the projection "
                  "carries the embedded model's MAL (same decoder, same settings) over to this shape's costs"
                  + judged_note(be["judged"]), "",
                  "| batch | decoder | ms / iteration | AR ms / step | break-even MAL | MAL embedded (batch) | "
                  "projected speedup |", "| ---: | --- | ---: | ---: | ---: | ---: | ---: |"]
        for b, rows in be["batches"].items():
            for r in rows:
                if "error" in r:
                    lines.append(f"| {b} | {r['decoder']} | failed: {r['error'][:80]} | | | | |")
                    continue
                lines.append(f"| {b} | {r['decoder']} | {fmt(r['ms_per_iteration'])} | {fmt(r['ar_ms_per_step'])} | "
                             f"{fmt(r['break_even_mal'], 2)} | {fmt(r['embedded_batch_mal'], 2)} | "
                             f"{fmt(r['projected_speedup'], 2)} |")
        lines.append("")
    flow = f["throughput"]
    if flow["rows"]:
        lines += [f"Throughput: {flow['shape']}, random weights, whole images (vispec step-cost --decoders; "
                  "bench/break_even.h). AR measured beside its bandwidth floor; the others projected: AR's images/s "
                  "x the embedded model's batch MAL / the break-even MAL" + judged_note(flow["judged"]), "",
                  "| batch | decoder | images/s (AR measured, others projected) | AR's floor images/s | of the floor | "
                  "break-even MAL | MAL embedded (batch) |", "| ---: | --- | ---: | ---: | ---: | ---: | ---: |"]
        lines += [f"| {r['batch']}{' (auto)' if r['batch_auto'] else ''} | {r['decoder']} | "
                  f"{fmt(r['projected_images_per_s'], 2)} | {fmt(r['floor_images_per_s'], 2)} | "
                  f"{fmt(r['of_floor'], 2)} | {fmt(r['break_even_mal'], 2)} | {fmt(r['embedded_batch_mal'], 2)} |"
                  for r in flow["rows"]]
        lines.append("")
    for b, bench in f["decoders"].items():
        lines += [f"Decoders at batch {bench['batch_size']} ({bench['images']} images each; the baseline "
                  f"{bench['baseline']}):", "",
                  "| decoder | ms / image | speedup | mean accepted length | speedup / length | ATen ops / image |",
                  "| --- | ---: | ---: | ---: | ---: | ---: |"]
        lines += [f"| {d['label']} | {fmt(d['ms_per_image'], 1)} | {fmt(d['speedup'], 2)} | "
                  f"{fmt(d['mean_accepted_length'], 2)} | {fmt(d['speedup_per_accepted_length'], 2)} | "
                  f"{fmt(d['aten_ops_per_image'], 0)} |" for d in bench["decoders"]]
        lines.append("")
    return "\n".join(lines)


def write_atomic(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as out:
        out.write(text)
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("summary")
    parser.add_argument("--demo-metrics", action="append", default=[], metavar="DTYPE=METRICS.jsonl")
    args = parser.parse_args()
    path = args.summary
    with open(path) as f:
        summary = json.load(f)
    summary["figures"] = figures(summary, dict(m.split("=", 1) for m in args.demo_metrics))
    write_atomic(os.path.join(os.path.dirname(path) or ".", "figures.md"), markdown(summary, summary["figures"]))
    write_atomic(path, json.dumps(summary, indent=2) + "\n")
    met = [t["met"] for t in summary["figures"]["targets"]]
    print(f"gpu_figures: {met.count(True)} targets met, {met.count(False)} missed, {met.count(None)} not measured")


if __name__ == "__main__":
    main()
