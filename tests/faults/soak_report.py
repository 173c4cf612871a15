"""The chaos soak's report: the checker's result (soak_check.py) as text for a person and as a
markdown table row for bench/README.md. Pure Python."""
import time

ACTIONS = ("kill", "link_down", "stop", "start")


def executed(events: list) -> dict:
    """What the soak did, by schedule kind: faults executed ("second" counts its two kills as one
    fault), joins (replacements started), and the launchers that stayed or were skipped."""
    out = {"kill": 0, "link": 0, "stop": 0, "second": 0, "slow": 0, "join": 0, "stayed": 0,
           "skipped": 0, "second_kills": 0}
    for e in events:
        kind, action = e.get("kind"), e.get("action")
        if action == "start" and kind == "join":
            out["join"] += 1
        elif action in ("stayed", "skipped"):
            out[action] += 1
        elif action == "kill" and kind == "second":
            out["second_kills"] += 1
        elif action in ("kill", "link_down", "stop") and kind in out:
            out[kind] += 1
    out["second"] = (out.pop("second_kills") + 1) // 2
    return out


def fmt(x, unit=" s"):
    return "-" if x is None else f"{x:.2f}{unit}" if isinstance(x, float) else f"{x}{unit}"


def text(r: dict, meta: dict, bad: list) -> str:
    restarts = (f", {r['segments'] - 1} restarts from step 0: {r['segments']} segments"
                if r["segments"] > 1 else "")
    lines = [f"chaos soak: seed {meta['seed']}, {meta['machines']} machines (MIN "
             f"{meta['min_machines']}), {meta['duration']:.0f} s of faults; load "
             f"{meta['load_start']:.1f} at the start, {meta['load_end']:.1f} at the end",
             f"faults drawn {meta['counts']}; executed {meta['executed']}",
             f"steps applied {r['steps']} ({r['first_step']}..{r['last_step']}{restarts}) in "
             f"{r['generations']} generations, {r['epochs_complete']} complete epochs, "
             f"{r['padding']} padding samples; median step {r['step_median'] * 1000:.1f} ms",
             f"effective training time {r['effective']:.1%} ({r['productive']:.1f} s at steps "
             f"of {r['wall']:.1f} s from the first step)",
             f"recoveries {len(r['recoveries'])}: pause p50 {fmt(r['pause_p50'])} p99 "
             f"{fmt(r['pause_p99'])}; fault -> first step p50 {fmt(r['from_event_p50'])} p99 "
             f"{fmt(r['from_event_p99'])}; steps lost p50 {fmt(r['lost_steps_p50'], '')} p99 "
             f"{fmt(r['lost_steps_p99'], '')}",
             f"job ends {len(r['job_ends'])}, samples lost {len(r['lost'])} epochs / repeated "
             f"{len(r['repeated'])} epochs, steps applied twice {len(r['twice'])}, replica "
             f"mismatches {len(r['mismatch'])}, unaccounted steps {len(r['unaccounted'])}, stalls "
             f"{len(r['stalls'])}"]
    lines.append("recoveries (generation, world, continued after, cause, pause, fault -> step, "
                 "steps lost):")
    for x in r["recoveries"]:
        lines.append(f"  gen {x['gen']} world {x['world']} after {x['continued_after']} "
                     f"{x['cause']}: pause {fmt(x['pause'])}, from fault {fmt(x['from_event'])}, "
                     f"lost {x['lost_steps']}{'' if x['trained'] else ' (never trained)'}")
    lines.append("PASSED" if not bad else "FAILED:\n  " + "\n  ".join(bad))
    return "\n".join(lines)


def row(r: dict, meta: dict, bad: list, commit: str) -> str:
    """One markdown row: | date | commit | seed | machines (MIN) | minutes | load | faults
    executed | job ends | samples lost/repeated | twice | mismatches | ETT | recoveries | pause
    p50/p99 | fault->step p50/p99 | lost steps p50/p99 | verdict |"""
    e = meta["executed"]
    faults = " ".join(f"{k} {e[k]}" for k in ("kill", "link", "stop", "second", "slow", "join"))
    when = time.strftime("%Y-%m-%d %H:%M", time.gmtime(meta["started"]))
    return (f"| {when} | {commit} | {meta['seed']} | {meta['machines']} ({meta['min_machines']})"
            f" | {meta['duration'] / 60:.0f} | {meta['load_start']:.1f}-{meta['load_end']:.1f} |"
            f" {faults} | {len(r['job_ends'])} | {len(r['lost'])}/{len(r['repeated'])} | "
            f"{len(r['twice'])} | {len(r['mismatch'])} | {r['effective']:.1%} | "
            f"{len(r['recoveries'])} | {fmt(r['pause_p50'])}/{fmt(r['pause_p99'])} | "
            f"{fmt(r['from_event_p50'])}/{fmt(r['from_event_p99'])} | "
            f"{fmt(r['lost_steps_p50'], '')}/{fmt(r['lost_steps_p99'], '')} | "
            f"{'pass' if not bad else 'FAIL: ' + '; '.join(bad)[:300]} |")

