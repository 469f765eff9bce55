#!/usr/bin/env python3
"""Tabulates the held-out evaluations of trained draft heads from their training logs.

    python3 bench/heads_table.py EAGLE_RUN SSD_RUN bench/results/draft-heads

reads EAGLE_RUN/log.jsonl (vispec train eagle-head) and SSD_RUN/log.jsonl (vispec train ssd-heads) and writes
NAME.json (the first and last evaluation records, verbatim) and NAME.md (the table spliced into docs/training.md). Held-out data:
the last units of the distillation index, cond stream; top-1/top-3: the target's greedy token among the
head's best 1/3; accept: the probability that speculative sampling at T = 1 (no CFG) accepts the draft.
"""
import json
import sys
from pathlib import Path


def evaluations(run):
    records = [json.loads(line) for line in (Path(run) / "log.jsonl").read_text().splitlines() if line.strip()]
    evals = [r for r in records if "loss" not in r]
    return evals[0], evals[-1]


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    eagle_first, eagle_last = evaluations(argv[0])
    ssd_first, ssd_last = evaluations(argv[1])
    out = Path(argv[2])
    out.with_suffix(".json").write_text(json.dumps(
        {"eagle_head": {"first": eagle_first, "last": eagle_last},
         "ssd_heads": {"first": ssd_first, "last": ssd_last}}, indent=2) + "\n")
    rows = ["| head | predicts | step | held-out top-1 | top-3 | accept (T=1) | top-1 before training |",
            "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
            "| EAGLE-2 drafter | next feature (one layer over the sequence) | {} | {:.3f} | {:.3f} | {:.3f} | {:.3f} |".format(
                eagle_last["step"], eagle_last["heldout_top1"], eagle_last["heldout_top3"],
                eagle_last["heldout_accept"], eagle_first["heldout_top1"])]
    names = sorted({k.split("_")[0] for k in ssd_last if k.endswith("_top1")}, key=lambda n: (n[0], int(n[2:])))
    for name in names:
        what = ("+{} in the row".format(name[2:]) if name.startswith("h") else "+{} row(s) below".format(name[2:]))
        rows.append("| SSD {} | {} | {} | {:.3f} | {:.3f} | {:.3f} | {:.3f} |".format(
            name, what, ssd_last["step"], ssd_last[name + "_top1"], ssd_last[name + "_top3"],
            ssd_last[name + "_accept"], ssd_first[name + "_top1"]))
    out.with_suffix(".md").write_text("\n".join(rows) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
