#!/usr/bin/python3
"""Issue 35's chaos soak at the criterion's size: tests/faults/soak.py for each seed (default 3
seeds x 25 minutes, 8 machines x 1 process, MIN 2, 12 faults of every kind per run, effective
training time >= 95 %), one row per seed appended to the table in bench/README.md
("chaos_soak") with the date, the commit and the load; the full report of each run is printed.
(25 minutes, not 20: 12 replacements of 310-400 s each do not fit in 20 minutes with 8
machines and MIN 2: soak_schedule.py refuses such a schedule.) Root only (network namespaces).

Usage: sudo /usr/bin/python3 bench/chaos_soak.py --launcher build/launcher/accel-launch \\
           --train build/examples/train.bin [--seeds 1,2,3] [--duration 1500] [--no-readme]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "faults"))

import soak_report  # noqa: E402

SECTION = "### chaos_soak"


def commit() -> str:
    out = subprocess.run(["git", "-C", HERE, "rev-parse", "--short", "HEAD"], capture_output=True,
                         text=True)
    dirty = subprocess.run(["git", "-C", HERE, "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    return (out.stdout.strip() or "?") + ("+changes" if dirty else "")


def add_row(readme: str, line: str) -> None:
    """Appends `line` to the chaos_soak table (the table ends at the first blank line after
    the section's header row)."""
    with open(readme) as f:
        text = f.read()
    at = text.find(SECTION)
    if at < 0:
        raise SystemExit(f"{readme} has no '{SECTION}' section")
    header = text.find("| date (UTC)", at)
    end = text.find("\n\n", header)
    end = len(text) if end < 0 else end
    with open(readme, "w") as f:
        f.write(text[:end] + "\n" + line + text[end:])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--launcher", required=True)
    p.add_argument("--train", required=True)
    p.add_argument("--seeds", default="1,2,3")
    p.add_argument("--machines", type=int, default=8)
    p.add_argument("--min_machines", type=int, default=2)
    p.add_argument("--duration", type=float, default=1500)
    p.add_argument("--per_kind", type=int, default=12)
    p.add_argument("--min_effective", type=float, default=0.95)
    p.add_argument("--no-readme", dest="readme", action="store_false",
                   help="print the rows instead of adding them to bench/README.md")
    p.add_argument("--keep", default="", help="copy failed runs' logs and traces here")
    p.add_argument("--verbose", action="store_true", help="print every action as it happens")
    p.add_argument("--results", default="", help="keep each seed's soak.py --json here "
                   "(result, schedule and every action: soak_check.py can re-read a run)")
    args = p.parse_args()
    rows, failed = [], 0
    for seed in [int(s) for s in args.seeds.split(",")]:
        with tempfile.TemporaryDirectory(prefix="accel_chaos_") as tmp:
            out = os.path.join(tmp, "result.json")
            cmd = [sys.executable, os.path.join(HERE, "..", "tests", "faults", "soak.py"),
                   "--launcher", args.launcher, "--train", args.train, "--machines",
                   str(args.machines), "--min_machines", str(args.min_machines), "--seed",
                   str(seed), "--duration", str(args.duration), "--per_kind",
                   str(args.per_kind), "--min_effective", str(args.min_effective), "--json", out]
            if args.keep:
                cmd += ["--keep", args.keep]
            if args.verbose:
                cmd.append("--verbose")
            code = subprocess.run(cmd).returncode
            if code == 77:
                return 77
            failed += code != 0
            if not os.path.exists(out):
                rows.append(f"| seed {seed}: no result (soak.py exit {code}) |")
                continue
            with open(out) as f:
                data = json.load(f)
            if args.results:
                os.makedirs(args.results, exist_ok=True)
                shutil.copy(out, os.path.join(args.results, f"seed{seed}.json"))
        rows.append(soak_report.row(data["result"], data["meta"], data["problems"], commit()))
    for line in rows:
        print(line)
        if args.readme:
            add_row(os.path.join(HERE, "README.md"), line)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
