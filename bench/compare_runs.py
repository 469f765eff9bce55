#!/usr/bin/env python3
"""Two recorded runs of one bench file side by side, decoder by decoder (by label).

    python3 bench/compare_runs.py BEFORE.json AFTER.json OUT [--before-name A] [--after-name B]

reads two `vispec bench` results (bench/results/NAME.json) and writes OUT.md: for every label in both runs, the
mean accepted length (tokens per target forward), the acceptance rate, class agreement and FID of each run,
and the ratio of the accepted lengths. It is how a retrained model family is compared with the one it replaces
(the same bench file, prompts and seeds: only the weights differ). Times are left out: two runs made on
different days share no machine noise, so only the counts and the judges' figures compare.
"""
import argparse
import json
import sys


def read_run(path):
    try:
        with open(path) as f:
            run = json.load(f)
        return run, {d["label"]: d for d in run["decoders"]}
    except (OSError, ValueError, KeyError, TypeError) as e:
        sys.exit(f"{path}: not a vispec bench result ({e})")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("out")
    parser.add_argument("--before-name", default="before")
    parser.add_argument("--after-name", default="after")
    args = parser.parse_args()
    before_run, before = read_run(args.before)
    after_run, after = read_run(args.after)
    if before_run.get("bench_file") != after_run.get("bench_file"):
        sys.exit(f"{args.after}: bench_file {after_run.get('bench_file')!r} is not {args.before}'s "
                 f"{before_run.get('bench_file')!r}: only runs of one bench file compare")
    labels = [d["label"] for d in after_run["decoders"] if d["label"] in before]
    if not labels:
        sys.exit(f"{args.after}: no decoder label in common with {args.before}")
    b, a = args.before_name, args.after_name
    lines = [
        f"{after_run['images_per_decoder']} images per decoder, the same prompts and seeds in both runs; "
        f"{b}: {before_run['date_utc']}, {a}: {after_run['date_utc']}.",
        "",
        f"| decoder | accepted length, {b} | {a} | {a} / {b} | acceptance rate, {b} | {a} "
        f"| class agreement, {b} | {a} | FID, {b} | {a} |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for label in labels:
        x, y = before[label], after[label]
        lx, ly = x["mean_accepted_length"], y["mean_accepted_length"]
        lines.append(
            f"| {label} | {lx:.2f} | {ly:.2f} | {ly / lx:.2f} | {x['acceptance_rate']:.3f} | "
            f"{y['acceptance_rate']:.3f} | {x['class_agreement']:.3f} | {y['class_agreement']:.3f} | "
            f"{x['fid']:.2f} | {y['fid']:.2f} |")
    with open(args.out + ".md", "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"{args.out}.md: {len(labels)} decoders")


if __name__ == "__main__":
    main()
