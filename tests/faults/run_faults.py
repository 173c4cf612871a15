#!/usr/bin/python3
"""The fault suite: two machines (network namespaces), 2 × 2 CPU processes of train.bin under
accel-launch, one fault per trial, N trials per scenario. Prints one table:

  scenario, trials, successes, median and max seconds until no process of the job is left
  (from the fault; for `restart`, until the restarted job finished; for `token-mismatch`,
  from the launch), and in how many trials the root cause was named as expected.

A trial succeeds when every process of the job on both machines is gone within the scenario's
bound (10 s; a hang: hang_timeout + 5 s), the root cause is named right, and the scenario's own
checks hold. Needs root. Exit 0 when every trial passed, 1 when any failed, 77 when none failed
and something could not run (no root, no namespaces, a scenario's missing package), with the
reason; under CI (CI=true) or ACCEL_STRICT_TESTS=1 that is exit 1 (tests/testing/skip.py).

Usage: run_faults.py --launcher L --train T --intruder I [--trials N]
                     [--scenarios a,b | --skip a,b] [--keep DIR]
"""
import argparse
import os
import shutil
import statistics
import sys
import tempfile
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testing"))

from cluster import Cluster  # noqa: E402
from job import Tools  # noqa: E402
from scenarios import SCENARIOS, Context, Outcome, Skipped  # noqa: E402
from skip import skip  # noqa: E402
from security import SECURITY_SCENARIOS  # noqa: E402

SCENARIOS.update(SECURITY_SCENARIOS)


def parse_args() -> argparse.Namespace:
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--launcher", required=True, help="the accel-launch binary")
    p.add_argument("--train", required=True, help="the train.bin binary")
    p.add_argument("--intruder", required=True, help="the rdzv_intruder binary")
    p.add_argument("--python_script", default=os.path.join(here, "..", "testing",
                                                           "torch_uneven.py"))
    p.add_argument("--python_ddp", default=os.path.join(here, "..", "testing", "torch_ddp.py"))
    p.add_argument("--trials", type=int, default=1)
    p.add_argument("--scenarios", default="", help="comma list (default: all)")
    p.add_argument("--skip", default="", help="comma list of scenarios to leave out")
    p.add_argument("--keep", default="", help="copy the logs of failed trials here")
    args = p.parse_args()
    if args.trials < 1:
        p.error("--trials must be >= 1")
    chosen = [s for s in args.scenarios.split(",") if s] or list(SCENARIOS)
    unknown = [s for s in chosen + [s for s in args.skip.split(",") if s] if s not in SCENARIOS]
    if unknown:
        p.error(f"unknown scenario(s) {', '.join(unknown)}; known: {', '.join(SCENARIOS)}")
    args.chosen = [s for s in chosen if s not in args.skip.split(",")]
    return args


def table(rows: list) -> str:
    head = f"{'scenario':<18} {'trials':>6} {'ok':>4} {'median s':>9} {'max s':>7} {'root cause':>11}"
    lines = [head, "-" * len(head)]
    for name, outcomes in rows:
        if isinstance(outcomes, Skipped):
            lines.append(f"{name:<18} skipped: {outcomes.why}")
            continue
        times = [o.seconds for o in outcomes]
        lines.append(f"{name:<18} {len(outcomes):>6} {sum(o.ok for o in outcomes):>4} "
                     f"{statistics.median(times):>9.2f} {max(times):>7.2f} "
                     f"{sum(o.root_ok for o in outcomes):>6}/{len(outcomes):<4}")
    return "\n".join(lines)


def main() -> int:
    args = parse_args()
    if os.geteuid() != 0:
        return skip(f"the fault suite needs root for ip netns (euid {os.geteuid()})")
    if shutil.which("ip") is None:
        return skip("iproute2 missing")
    tools = Tools(args.launcher, args.train, args.intruder, os.path.abspath(args.python_script),
                  os.path.abspath(args.python_ddp))
    cluster = Cluster()
    work = tempfile.mkdtemp(prefix="accel_faults_")
    rows = []
    all_ok = True
    try:
        try:
            cluster.up()
        except Exception as e:  # noqa: BLE001 - any failure to build the namespaces skips
            return skip(f"cannot create network namespaces: {e}")
        ctx = Context(cluster, tools, work)
        for name in args.chosen:
            outcomes = []
            for trial in range(args.trials):
                try:
                    outcome = SCENARIOS[name](ctx)
                except Exception:  # noqa: BLE001 - a crash in a trial is a failed trial
                    traceback.print_exc()
                    cluster.kill_all()
                    outcome = Outcome(0, False, False, False, "the trial crashed")
                if isinstance(outcome, Skipped):
                    outcomes = outcome
                    break
                left = cluster.kill_all()
                if left:
                    outcome.ok = False
                    outcome.note += f" {left} process(es) left behind"
                status = "ok" if outcome.ok else "FAILED"
                print(f"{name} trial {trial + 1}: {status} {outcome.seconds:.2f} s {outcome.note}",
                      file=sys.stderr, flush=True)
                if not outcome.ok and args.keep and ctx.last_work:
                    shutil.copytree(ctx.last_work, os.path.join(args.keep, f"{name}-{trial + 1}"),
                                    dirs_exist_ok=True)
                outcomes.append(outcome)
            rows.append((name, outcomes))
            all_ok = all_ok and (isinstance(outcomes, Skipped) or all(o.ok for o in outcomes))
    finally:
        cluster.down()
        shutil.rmtree(work, ignore_errors=True)
    print(table(rows))
    if not all_ok:
        return 1
    skipped = [f"{name}: {outcomes.why}" for name, outcomes in rows
               if isinstance(outcomes, Skipped)]
    return skip("scenario(s) skipped: " + "; ".join(skipped)) if skipped else 0


if __name__ == "__main__":
    sys.exit(main())
