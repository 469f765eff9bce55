#!/usr/bin/env python3
"""A trainer's loss curve from its log.jsonl: a table and, where gnuplot is installed, a plot.

    python3 scripts/loss_curve.py OUT/log.jsonl PREFIX [--title TITLE] [--ymax Y]

writes PREFIX.tsv (step, training loss, held-out loss; "-" where a step has none) and PREFIX.png. A resumed
trainer logs again the steps between its last checkpoint and the interruption (the same batches, so the same
losses): the last record of each step and kind is kept. Training loss is one batch's, so it is noisy; the
held-out loss is what says whether training still improves.
"""
import argparse
import json
import shutil
import subprocess
import sys


def read_curve(path):
    train, held_out = {}, {}
    with open(path) as f:
        for line_no, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                step = int(record["step"])
            except (ValueError, KeyError) as e:
                sys.exit(f"{path}:{line_no}: not a log record ({e})")
            if "loss" in record:
                train[step] = float(record["loss"])
            if "test_loss" in record:
                held_out[step] = float(record["test_loss"])
    if not train:
        sys.exit(f"{path}: no training loss records")
    return train, held_out


def write_table(path, train, held_out):
    with open(path, "w") as f:
        f.write("step\ttrain_loss\theldout_loss\n")
        for step in sorted(set(train) | set(held_out)):
            cells = [f"{d[step]:.4f}" if step in d else "-" for d in (train, held_out)]
            f.write(f"{step}\t" + "\t".join(cells) + "\n")


def plot(table, png, title, ymax):
    if shutil.which("gnuplot") is None:
        print("no plot: gnuplot is missing (Debian: apt-get install gnuplot-nox)", file=sys.stderr)
        return
    script = f"""set terminal pngcairo size 800,480
set output '{png}'
set title '{title}'
set xlabel 'step'
set ylabel 'cross-entropy (nats per token)'
set datafile missing '-'
set key top right
set grid
set yrange [*:{ymax if ymax is not None else "*"}]
plot '{table}' using 1:2 skip 1 with lines lc rgb '#9999cc' title 'training batch', \\
     '{table}' using 1:3 skip 1 with linespoints lw 2 pt 7 ps 0.6 lc rgb '#cc3333' title 'held-out'
"""
    subprocess.run(["gnuplot"], input=script, text=True, check=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log")
    parser.add_argument("prefix")
    parser.add_argument("--title", default="loss")
    parser.add_argument("--ymax", type=float,
                        help="top of the loss axis; default 5%% above the first held-out loss (the first steps' "
                             "losses are far above the rest and would flatten the curve)")
    args = parser.parse_args()
    train, held_out = read_curve(args.log)
    write_table(args.prefix + ".tsv", train, held_out)
    ymax = args.ymax
    if ymax is None and held_out:
        ymax = 1.05 * held_out[min(held_out)]
    plot(args.prefix + ".tsv", args.prefix + ".png", args.title, ymax)
    last = max(held_out) if held_out else None
    summary = f"{len(train)} training records up to step {max(train)}"
    if last is not None:
        best = min(held_out, key=held_out.get)
        summary += f"; held-out loss {held_out[last]:.4f} at step {last}, best {held_out[best]:.4f} at {best}"
    print(summary)


if __name__ == "__main__":
    main()
