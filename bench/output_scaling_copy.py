"""bench/output_scaling.sh's file work (see there): copy unit 0 to a 10^5-image job, set up a requeue of its last
unit, and write the report.
  output_scaling_copy.py OUT copy
  output_scaling_copy.py OUT requeue extend|rebuild
  output_scaling_copy.py WORK report RESULTS CORES
"""
import datetime, json, os, re, shutil, sys, zlib

UNITS, SIZE, IMAGES = 1563, 64, 100_000
LAST = UNITS - 1


def records(out):
    lines = open(f"{out}/journal.jsonl").read().splitlines()
    return lines[0], [json.loads(l) for l in lines[1:]]


def copy(out):
    header, recs = records(out)
    (zero,) = [r for r in recs if r["unit"] == 0]
    lines = [header, json.dumps(zero)]
    for u in range(1, LAST):
        r = dict(zero, unit=u, files=[])
        for name, size, crc in zero["files"]:
            new = re.sub(r"unit-000000", f"unit-{u:06d}", name)
            m = re.fullmatch(r"(images|tokens)/(\d{8})\.(png|npy)", name)
            if m:
                new = f"{m[1]}/{int(m[2]) + u * SIZE:08d}.{m[3]}"
            shutil.copyfile(f"{out}/{name}", f"{out}/{new}")
            r["files"].append([new, size, crc])
        lines.append(json.dumps(r))
    open(f"{out}/journal.jsonl", "w").write("\n".join(lines) + "\n")


def requeue(out, mode):
    """The state a run stopped before the last unit leaves: that unit un-journaled and its files gone, metrics.jsonl
    and the summary's record of it without the unit's lines (mode rebuild: without the record, as before)."""
    header, recs = records(out)
    (last,) = [r for r in recs if r["unit"] == LAST]
    keep = [json.dumps(r) for r in recs if r["unit"] != LAST]
    open(f"{out}/journal.jsonl", "w").write("\n".join([header] + keep) + "\n")
    tail = open(f"{out}/metrics/unit-{LAST:06d}.jsonl", "rb").read()
    for name, _, _ in last["files"]:
        os.remove(f"{out}/{name}")
    summary = json.load(open(f"{out}/summary.json"))
    data = open(f"{out}/metrics.jsonl", "rb").read()
    held = [u for lo, hi in summary["metrics"]["units"] for u in range(lo, hi + 1)]
    assert held[-1] == LAST and data.endswith(tail), "the last unit's lines are not at the end"
    data = data[: len(data) - len(tail)]
    open(f"{out}/metrics.jsonl", "wb").write(data)
    if mode == "extend":
        summary["metrics"] = {"bytes": len(data), "crc32": f"{zlib.crc32(data):08x}", "units": [[0, LAST - 1]]}
    else:
        del summary["metrics"]
    json.dump(summary, open(f"{out}/summary.json", "w"))


def end_of_run(log):
    """Seconds from the last progress line to the "done" line of a vispec run's log."""
    stamp = lambda l: datetime.datetime.strptime(l[1:13], "%H:%M:%S.%f")
    lines = open(log).read().splitlines()
    progress = [l for l in lines if "] units " in l]
    (done,) = [l for l in lines if "] done: " in l]
    return (stamp(done) - stamp(progress[-1])).total_seconds()


def report(work, results, cores):
    rows = []
    for f in ("files", "shards"):
        out = f"{work}/{f}/out"
        rows.append({
            "output": f,
            "inodes": 1 + sum(len(dirs) + len(files) for _, dirs, files in os.walk(out)),
            "journal_bytes": os.path.getsize(f"{out}/journal.jsonl"),
            "end_of_run_extend_s": [end_of_run(f"{work}/{f}/extend-{r}.log") for r in (1, 2)],
            "end_of_run_rebuild_s": [end_of_run(f"{work}/{f}/rebuild-{r}.log") for r in (1, 2)],
            "noop_rerun_s": float(open(f"{work}/{f}/noop.s").read()),
            "verify_s": float(open(f"{work}/{f}/verify.s").read()),
        })
    out = {"job": f"AR on the embedded model, {IMAGES} images in {UNITS} units of {SIZE}", "cores": int(cores), "rows": rows}
    json.dump(out, open(f"{results}/output-scaling.json.tmp", "w"), indent=2)
    os.replace(f"{results}/output-scaling.json.tmp", f"{results}/output-scaling.json")
    md = [f"{out['job']} (unit 0 decoded, its files copied to the others), CPU with {cores} cores.", "",
          "| output | inodes | journal MB | end of run, metrics.jsonl extended (s) | end of run, rebuilt as before (s) | no-op rerun (s) | verify (s) |",
          "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        md.append(f"| {r['output']} | {r['inodes']:,} | {r['journal_bytes'] / 1e6:.2f} | "
                  + ", ".join(f"{s:.3f}" for s in r["end_of_run_extend_s"]) + " | "
                  + ", ".join(f"{s:.3f}" for s in r["end_of_run_rebuild_s"])
                  + f" | {r['noop_rerun_s']:.2f} | {r['verify_s']:.2f} |")
    open(f"{results}/output-scaling.md.tmp", "w").write("\n".join(md) + "\n")
    os.replace(f"{results}/output-scaling.md.tmp", f"{results}/output-scaling.md")
    print("\n".join(md))


if __name__ == "__main__":
    what = sys.argv[2]
    if what == "copy":
        copy(sys.argv[1])
    elif what == "requeue":
        requeue(sys.argv[1], sys.argv[3])
    else:
        report(sys.argv[1], sys.argv[3], sys.argv[4])
