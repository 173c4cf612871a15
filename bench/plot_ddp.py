#!/usr/bin/env python3
"""Draws ddp_bench's results as a PNG (gnuplot): one group of bars per configuration (model,
machines x processes), accel and torchrun median samples/s side by side, the ratio on top.

Usage: /usr/bin/python3 bench/plot_ddp.py OUT.png bench/results/ddp_bench.json [more.json ...]
(ddp_bench.py calls it for its own results when gnuplot is installed.)
"""
import json
import os
import subprocess
import sys
import tempfile


def configurations(paths):
    """(label, accel, torchrun) per configuration, in the files' order."""
    out = []
    for path in paths:
        with open(path) as f:
            data = json.load(f)
        by_key = {}
        for row in data["rows"]:
            key = (row["model"], row["machines"], row["world"])
            by_key.setdefault(key, {})[row["variant"]] = row["median_samples_s"]
        for (model, machines, world), variants in by_key.items():
            if "accel" not in variants or "torchrun" not in variants:
                continue
            per = world // machines
            where = f"{machines} machines x {per}" if machines > 1 else f"{world} proc"
            out.append((f"{model} {where}", variants["accel"], variants["torchrun"]))
    return out


def plot(png, paths):
    rows = configurations(paths)
    if not rows:
        raise SystemExit("no accel/torchrun rows in " + ", ".join(paths))
    with tempfile.NamedTemporaryFile("w", suffix=".dat", delete=False) as f:
        for label, accel, torch in rows:
            f.write(f'"{label}" {accel:.1f} {torch:.1f} {accel / torch:.2f}\n')
        data = f.name
    script = f"""set terminal png size 1100,600
set output '{png}'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set logscale y
set yrange [{min(min(r[1], r[2]) for r in rows) / 2:.0f}:*]
set ylabel 'median samples/s (5 alternating runs)'
set xtics rotate by -25 scale 0
set key top right
set title 'ddp\\_bench: train.bin under accel-launch vs Python DDP under torchrun (SGD, fp32, CPU)'
plot '{data}' using 2:xtic(1) title 'accel', \\
     '' using 3 title 'torchrun', \\
     '' using ($0):($2*1.25):(sprintf('%.2fx', $4)) with labels notitle
"""
    try:
        subprocess.run(["gnuplot"], input=script, text=True, check=True)
    finally:
        os.unlink(data)
    print(f"wrote {png}")


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    plot(sys.argv[1], sys.argv[2:])
