#!/usr/bin/env python3
"""Any vispec trainer's curves from its log.jsonl: a table and, where gnuplot is installed, a plot.

    python3 scripts/loss_curve.py OUT/log.jsonl PREFIX [--title TITLE] [--ymax Y]

writes PREFIX.tsv (step, the training batch's loss, then every held-out measure the trainer logs; "-" where a
step has none) and PREFIX.png. Which trainer wrote the log is read from its held-out records' names (KINDS),
and so is what its loss is: the GPTs' is cross-entropy, the heads' a feature regression, the VQ's a
reconstruction error. Held-out losses and errors share the loss axis; rates (top-1 agreement, acceptance,
accuracy, token match) go on a second axis from 0 to 1. A resumed trainer logs again the steps between its
last checkpoint and the interruption (the same batches, so the same losses): the last record of each step and
kind is kept. Training loss is one batch's, so it is noisy; the held-out measures say whether training still
improves.
"""
import argparse
import json
import shutil
import subprocess
import sys

# (a held-out name that only this trainer logs, the trainer, what its training loss is)
KINDS = [
    ("test_loss", "GPT (train gpt)", "next-token cross-entropy (nats per token)"),
    ("heldout_vloss", "EAGLE head (train eagle-head)",
     "SmoothL1 feature regression + weighted token cross-entropy (vloss + w ploss)"),
    ("test_mse", "VQ (train vq)", "reconstruction MSE + codebook + commitment"),
    ("test_accuracy", "classifier (train classifier)", "cross-entropy (nats per image)"),
    ("test_up_mse", "MuLo-SD resamplers (train mulo-resamplers)", "up- and down-sampler MSE + commitment"),
    ("_accept", "SSD heads (train ssd-heads)", "SmoothL1 feature regression, summed over the heads"),
]
# The training records' bookkeeping, not curves.
NOT_CURVES = {"step", "lr", "elapsed_s", "samples_per_s", "eta", "ranks"}
RATES = ("accept", "top1", "top3", "accuracy", "match")


def read_log(path):
    """(training loss by step, held-out measures: name -> step -> value)."""
    train, held_out = {}, {}
    with open(path) as f:
        for line_no, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                step = int(record["step"])
            except (ValueError, KeyError, TypeError) as e:
                sys.exit(f"{path}:{line_no}: not a log record ({e})")
            if "lr" in record:  # the training loop's record of a batch
                if "loss" not in record:
                    sys.exit(f"{path}:{line_no}: a training record without 'loss'")
                train[step] = float(record["loss"])
                continue
            for name, value in record.items():
                if name not in NOT_CURVES and isinstance(value, (int, float)):
                    held_out.setdefault(name, {})[step] = float(value)
    if not train:
        sys.exit(f"{path}: no training loss records")
    return train, held_out


def kind_of(held_out):
    for key, trainer, objective in KINDS:
        if any(name == key or (key.startswith("_") and name.endswith(key)) for name in held_out):
            return trainer, objective
    return "a trainer", "the trainer's objective"


def is_rate(name):
    return name.split("_")[-1] in RATES or name.endswith("accuracy")


def write_table(path, train, held_out, names):
    columns = [train] + [held_out[n] for n in names]
    with open(path, "w") as f:
        f.write("step\ttrain_loss\t" + "\t".join(names) + "\n")
        for step in sorted(set(train).union(*[set(c) for c in columns])):
            cells = [f"{c[step]:.4f}" if step in c else "-" for c in columns]
            f.write(f"{step}\t" + "\t".join(cells) + "\n")


def plot(table, png, title, objective, names, ymax):
    if shutil.which("gnuplot") is None:
        print("no plot: gnuplot is missing (Debian: apt-get install gnuplot-nox)", file=sys.stderr)
        return
    series = [f"'{table}' using 1:2 skip 1 with lines lc rgb '#9999cc' title 'training batch'"]
    for i, name in enumerate(names):
        axes = "x1y2" if is_rate(name) else "x1y1"
        series.append(f"'{table}' using 1:{i + 3} skip 1 axes {axes} with linespoints lw 2 pt 7 ps 0.6 "
                      f"title 'held-out {name}'")
    rates = any(is_rate(n) for n in names)
    script = f"""set terminal pngcairo size 900,500 noenhanced
set output '{png}'
set title '{title}'
set xlabel 'step'
set ylabel 'loss: {objective}'
set datafile missing '-'
set key outside bottom center horizontal
set grid
set yrange [*:{ymax if ymax is not None else "*"}]
{"set y2range [0:1]; set y2tics; set y2label 'held-out rate'; set ytics nomirror" if rates else ""}
plot {", ".join(series)}
"""
    subprocess.run(["gnuplot"], input=script, text=True, check=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log")
    parser.add_argument("prefix")
    parser.add_argument("--title", help="default: the trainer that wrote the log")
    parser.add_argument("--ymax", type=float,
                        help="top of the loss axis; default 5%% above the curves where the held-out records start "
                             "(the first steps' losses are far above the rest and would flatten the curve)")
    args = parser.parse_args()
    train, held_out = read_log(args.log)
    trainer, objective = kind_of(held_out)
    names = sorted(held_out, key=lambda n: (is_rate(n), n))  # losses first
    write_table(args.prefix + ".tsv", train, held_out, names)
    losses = [n for n in names if not is_rate(n)]
    ymax = args.ymax
    if ymax is None and losses:  # 5% above every curve where the held-out records start
        t0 = min(min(held_out[n]) for n in losses)
        tops = [held_out[n][min(held_out[n])] for n in losses]
        tops += [train[s] for s in sorted(train) if s >= t0][:1]
        ymax = 1.05 * max(tops)
    plot(args.prefix + ".tsv", args.prefix + ".png", args.title or trainer, objective, names, ymax)
    summary = f"{trainer}: {len(train)} training records up to step {max(train)}, loss = {objective}"
    for name in names:
        curve = held_out[name]
        last = max(curve)
        best = (max if is_rate(name) else min)(curve, key=curve.get)
        summary += f"; held-out {name} {curve[last]:.4f} at step {last}, best {curve[best]:.4f} at {best}"
    print(summary)


if __name__ == "__main__":
    main()
