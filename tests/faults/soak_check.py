"""The chaos soak's checker: reads train.bin --trace files and the soak's event log and checks
the run by exact accounting (docs/design/chaos-soak.md):

  - no job end while >= MIN machines live (machine 0's launcher exited early, or training
    started again from step 0, or a worker was restarted on a machine the soak did not restart);
  - every generation's replicas bitwise equal: every process of a generation reports the same
    step and parameter hash when it starts or regroups (and at every traced step and end);
  - no step applied twice: each process completes steps 1, 2, ... once each, in order, and
    continues after a regroup at a step no older than its last;
  - every sample of every epoch trained once: a step's samples are those every rank of its
    generation fetched for it (the lines written before the forward, so a rank killed after
    its all-reduce is still counted); the applied version of each step is the one the next
    generation continued from; wrap-around padding (marked by train.bin) is not a sample;
  - effective training time: the time between consecutive steps of one generation (each at most
    STALL_FACTOR x the run's median step), over the wall time from the first step to the end;
    recoveries, start-ups of new generations and time below MIN are the rest;
  - no stall: no step for more than STALL_LIMIT s while >= MIN machines live;
  - every recovery (a generation after the first): its cause, the pause between the last step
    before it and the first after it, the time from its fault to that first step, the steps
    lost (completed in the old generation, not continued from).

check(traces, events, samples, end_time) -> a dict of the findings; problems(result) -> the
criteria that failed, as sentences. Pure Python, no root: soak_check_test.py feeds it traces.
"""
import glob
import os
import re
import statistics

STALL_FACTOR = 5.0
STALL_LIMIT = 60.0  # s without a step while >= MIN machines live: the job is stuck


def parse_line(line: str):
    """One trace line -> (kind, fields) or None for a partial or unknown line."""
    w = line.split()
    if not w:
        return None
    kind = w[0]
    try:
        if kind == "fetch":
            s, p = w.index("samples"), w.index("pad")
            f = dict(zip(w[1:s:2], w[2:s:2]))
            return kind, {"step": int(f["step"]), "gen": int(f["gen"]), "epoch": int(f["epoch"]),
                          "rank": int(f["rank"]), "samples": [int(x) for x in w[s + 1:p]],
                          "pad": int(w[p + 1])}
        if kind == "step":
            f = dict(zip(w[2::2], w[3::2]))
            f["step"] = w[1]
        elif kind in ("start", "error", "regroup", "end"):
            f = dict(zip(w[1::2], w[2::2]))
        else:
            return None
        out = {k: (float(v) if k == "time" else v if k == "params" else int(v))
               for k, v in f.items()}
        if kind != "error" and "time" not in out:
            return None
        return kind, out
    except (ValueError, IndexError, KeyError):
        return None


def read_traces(prefix_glob: str) -> list:
    """Every trace file matching `<dir>/m<machine>.<pid>` -> [{machine, pid, lines}]."""
    out = []
    for path in sorted(glob.glob(prefix_glob)):
        m = re.search(r"m(\d+)\.(\d+)$", path)
        if not m:
            continue
        with open(path, errors="replace") as f:
            text = f.read()
        lines = text.split("\n")
        if not text.endswith("\n"):
            lines = lines[:-1]  # a line cut by SIGKILL mid-write
        parsed = [p for p in (parse_line(line) for line in lines) if p]
        out.append({"machine": int(m.group(1)), "pid": int(m.group(2)), "lines": parsed})
    return out


def pct(values, q):
    if not values:
        return None
    v = sorted(values)
    return v[min(len(v) - 1, int(round(q / 100 * (len(v) - 1))))]


def check(traces: list, events: list, samples: int, end_time: float, min_machines: int,
          stall_limit: float = STALL_LIMIT) -> dict:
    r = {"lost": [], "repeated": [], "twice": [], "mismatch": [], "job_ends": [], "gaps": [],
         "unaccounted": [], "recoveries": [], "stalls": []}
    gens = {}      # gen -> {"joins": [(proc, step, params, time)], "world": W}
    fetches = {}   # (gen, step) -> {rank: [(samples, pad, epoch)]}
    done = {}      # (gen, step) -> [time]
    errors = {}    # gen -> [time]
    hashes = {}    # (gen, step) -> {params}
    for proc in traces:
        name = f"m{proc['machine']}.{proc['pid']}"
        last = None
        for kind, f in proc["lines"]:
            if kind in ("start", "regroup"):
                g = gens.setdefault(f["gen"], {"joins": [], "world": f["world"]})
                g["joins"].append((name, f["step"], f["params"], f["time"], kind))
                if kind == "regroup" and last is not None and f["step"] < last:
                    r["twice"].append(f"{name} completed step {last} but continued after step "
                                      f"{f['step']} in generation {f['gen']}")
                if kind == "start":
                    last = f["step"]
                else:
                    last = max(last or 0, f["step"])
            elif kind == "fetch":
                fetches.setdefault((f["gen"], f["step"]), {}).setdefault(f["rank"], []).append(
                    (f["samples"], f["pad"], f["epoch"]))
            elif kind in ("step", "end"):
                if kind == "step":
                    if last is not None and f["step"] != last + 1:
                        r["twice" if f["step"] <= last else "gaps"].append(
                            f"{name} completed step {f['step']} after step {last}")
                    last = f["step"]
                    done.setdefault((f["gen"], f["step"]), []).append(f["time"])
                if "params" in f:
                    hashes.setdefault((f["gen"], f["step"]), set()).add(f["params"])
            elif kind == "error":
                errors.setdefault(f["gen"], []).append(f["time"])
    # Replicas at every change (and every traced step): one step and one hash per generation.
    order = sorted(gens)
    for g in order:
        steps = {s for _, s, _, _, _ in gens[g]["joins"]}
        params = {p for _, _, p, _, _ in gens[g]["joins"]}
        if len(steps) > 1 or len(params) > 1:
            r["mismatch"].append(f"generation {g}: processes start at steps {sorted(steps)} with "
                                 f"{len(params)} different parameter hashes")
        gens[g]["step"] = min(steps)
    for (g, s), ps in sorted(hashes.items()):
        if len(ps) > 1:
            r["mismatch"].append(f"generation {g} step {s}: {len(ps)} different parameter hashes")
    # Segments: a generation that starts again from step 0 after steps were trained is a job
    # restart (training state lost); each segment is accounted on its own.
    segments = []
    for g in order:
        if segments and gens[g]["step"] == 0 and any(gg < g for (gg, _) in done):
            r["job_ends"].append(f"generation {g} started again from step 0 (training state lost)")
            segments.append([])
        elif not segments:
            segments.append([])
        segments[-1].append(g)
    # The lineage: a generation's steps count up to where the next generation continued from.
    applied = {}  # (segment, step) -> gen
    for k, seg in enumerate(segments):
        for i, g in enumerate(seg):
            until = gens[seg[i + 1]]["step"] if i + 1 < len(seg) else None
            for (gg, s) in done:
                if gg == g and s > gens[g]["step"] and (until is None or s <= until):
                    applied[(k, s)] = g
            if until is not None and until < gens[g]["step"]:
                r["twice"].append(f"generation {seg[i + 1]} continues after step {until}, before "
                                  f"generation {g}'s start at step {gens[g]['step']}")
    steps = sorted(applied)
    for k in range(len(segments)):
        mine = [s for kk, s in steps if kk == k]
        if mine and mine != list(range(mine[0], mine[-1] + 1)):
            r["gaps"].append(f"applied steps are not contiguous: {len(mine)} from {mine[0]} to "
                             f"{mine[-1]}")
    # Samples: each applied step's samples from every rank of its generation.
    epochs = {}  # (segment, epoch) -> samples
    padding = 0
    for k, s in steps:
        g = applied[(k, s)]
        by_rank = fetches.get((g, s), {})
        world = gens[g]["world"]
        if sorted(by_rank) != list(range(world)):
            r["unaccounted"].append(f"step {s} (generation {g}, world {world}): fetch lines of "
                                    f"ranks {sorted(by_rank)}")
        for batches in by_rank.values():
            for batch, pad, epoch in batches:
                epochs.setdefault((k, epoch), []).extend(batch[:len(batch) - pad])
                padding += pad
    complete = 0
    for (k, e), got in sorted(epochs.items()):
        seen = {}
        for i in got:
            seen[i] = seen.get(i, 0) + 1
        twice = sorted(i for i, c in seen.items() if c > 1)
        where = f"epoch {e}" + (f" (segment {k})" if k else "")
        if twice:
            r["repeated"].append(f"{where}: {len(twice)} samples trained more than once "
                                 f"(e.g. {twice[:5]})")
        if (k, e + 1) in epochs:
            complete += 1
            missing = sorted(set(range(samples)) - set(seen))
            if missing:
                r["lost"].append(f"{where}: {len(missing)} samples never trained "
                                 f"(e.g. {missing[:5]})")
    r["epochs_complete"] = complete
    r["padding"] = padding
    # Time at steps: consecutive applied steps of one generation, each capped.
    times = {ks: min(done[(applied[ks], ks[1])]) for ks in steps}
    intervals = [times[(k, s)] - times[(k, s - 1)] for k, s in steps
                 if (k, s - 1) in times and applied[(k, s - 1)] == applied[(k, s)]]
    median = statistics.median(intervals) if intervals else 0.0
    productive = sum(min(d, STALL_FACTOR * median) for d in intervals)
    first = min(times.values()) if steps else end_time
    wall = max(end_time - first, 1e-9)
    r.update(steps=len(steps), first_step=steps[0][1] if steps else None,
             last_step=steps[-1][1] if steps else None, step_median=median,
             productive=productive, wall=wall, effective=productive / wall if steps else 0.0,
             generations=len(order), segments=len(segments))
    # Stalls: no step for more than `stall_limit` s while >= MIN machines lived (by the soak's
    # count at the stall's start), the end of the run included.
    lives = sorted((e["time"], e["live"]) for e in events if "live" in e)
    timeline = sorted(times.values()) + [end_time]
    for a, b in zip(timeline, timeline[1:]):
        live = next((n for t, n in reversed(lives) if t <= a), min_machines)
        if b - a > stall_limit and live >= min_machines:
            r["stalls"].append(f"no step for {b - a:.1f} s from {a - first:.1f} s into the run "
                               f"with {live} machines live (MIN {min_machines})")
    # Recoveries: each generation after the first.
    actions = sorted((e for e in events if e.get("action") in
                      ("kill", "link_down", "stop", "start")), key=lambda e: e["time"])
    for i, g in enumerate(order[1:], 1):
        prev = order[i - 1]
        first_after = min((t for (gg, s), ts in done.items() if gg == g for t in ts), default=None)
        before = [t for t in times.values() if t < (first_after or end_time)]
        last_before = max(before, default=None)
        old_done = [s for (gg, s) in done if gg == prev]
        noticed = min(errors.get(prev, []) + [t for _, _, _, t, _ in gens[g]["joins"]])
        cause = [e for e in actions if e["time"] <= noticed and e.get("machine") != 0]
        cause = cause[-1] if cause else None
        r["recoveries"].append({
            "gen": g, "world": gens[g]["world"], "continued_after": gens[g]["step"],
            "cause": f"{cause['action']} m{cause['machine']} ({cause.get('kind', '')})"
                     if cause else "?",
            "pause": (first_after - last_before) if first_after and last_before else None,
            "from_event": (first_after - cause["time"]) if first_after and cause else None,
            "lost_steps": max(0, max(old_done, default=gens[g]["step"]) - gens[g]["step"]),
            "trained": first_after is not None})
    # Job ends: machine 0's launcher exiting before the end; workers restarted by a launcher.
    for e in events:
        if e.get("action") == "exit" and e.get("machine") == 0 and e["time"] < end_time - 1:
            r["job_ends"].append(f"machine 0's launcher exited (code {e.get('code')}) at "
                                 f"{e['time'] - first:.1f} s with {e.get('live')} machines live "
                                 f"(MIN {min_machines})")
    launched = {}
    for e in events:
        if e.get("action") == "start":
            launched[e["machine"]] = launched.get(e["machine"], 0) + 1
    started = {}
    for proc in traces:
        started[proc["machine"]] = started.get(proc["machine"], 0) + 1
    for m, n in sorted(started.items()):
        if n > launched.get(m, 0):
            r["job_ends"].append(f"machine {m}: {n} workers started for {launched.get(m, 0)} "
                                 f"launcher starts (a worker restarted, not recovered in place)")
    trained = [x for x in r["recoveries"] if x["trained"]]
    for key in ("pause", "from_event", "lost_steps"):
        vals = [x[key] for x in trained if x[key] is not None]
        r[f"{key}_p50"], r[f"{key}_p99"] = pct(vals, 50), pct(vals, 99)
    return r


def problems(r: dict, min_effective: float = 0.0) -> list:
    """The criteria a result fails, one sentence each (empty: it passes)."""
    out = []
    for key, what in (("job_ends", "job end"), ("lost", "samples lost"),
                      ("repeated", "samples repeated"), ("twice", "step applied twice"),
                      ("mismatch", "replicas differ"), ("unaccounted", "samples unaccounted"),
                      ("gaps", "steps missing"), ("stalls", "stall")):
        for line in r[key][:5]:
            out.append(f"{what}: {line}")
        if len(r[key]) > 5:
            out.append(f"{what}: ... {len(r[key]) - 5} more")
    if not r["steps"]:
        out.append("no step was trained")
    if r["effective"] < min_effective:
        out.append(f"effective training time {r['effective']:.1%} < {min_effective:.0%}")
    return out


def load(trace_dir: str) -> list:
    return read_traces(os.path.join(glob.escape(trace_dir), "m*.*"))
