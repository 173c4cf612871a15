"""The chaos soak's schedule: every fault of a run drawn from one seed before it starts
(docs/design/chaos-soak.md). Kinds:

  kill    every process of a machine SIGKILLed; a replacement joins after 3-20 s
  link    the machine's link down 4-10 s (lost after ~3 s), then up; it is replaced 2 s later
          if its launcher left
  stop    the machine's launcher SIGSTOPped 2-8 s, then SIGCONT (its workers keep running; the
          silent limit is 30 s, so it should stay); replaced 2 s later if it left anyway
  second  a machine killed, and another 0-2 s into the regroup that follows (counted from the
          moment machine 0's launcher writes the new generation); both replaced after 3-20 s
  slow    a machine killed whose replacement arrives only after several minutes (310-400 s,
          past the 300 s connect timeout; runs shorter than 15 min: 30-45 % of the run)
  join    a new machine joining the running job: every replacement above is one

Victims are never machine 0 (it hosts the rendezvous) and are drawn from the machines the
schedule expects to be live, so that no fault takes the job below MIN (a fault waits until
enough are; a schedule that cannot fit is refused); at run time a victim that
is not live is replaced by the next live machine (logged). Pure Python, no root.
"""
import random

FAULTS = ("kill", "link", "stop", "second", "slow")
KINDS = FAULTS + ("join",)
JOIN_SECONDS = 15.0  # from a joiner's start to its first step, assumed by the schedule


def slow_range(duration: float) -> tuple:
    return (310.0, 400.0) if duration >= 900 else (0.30 * duration, 0.45 * duration)


def draw(seed: int, duration: float, machines: int, min_machines: int, per_kind: int,
         warm: float = 20.0, tail: float = 15.0, gap: float = 6.0, kinds: tuple = FAULTS) -> list:
    """Returns the faults in time order: dicts with "at" (seconds after the first step), "kind",
    "machine", and per kind "down" / "stopped" (seconds), "second" (machine), "into" (seconds
    into the regroup) and "replace" (seconds from the fault to each replacement's start, per
    machine). `kinds`: the fault kinds drawn (all by default; CI's short run takes a few).
    Raises ValueError when the faults cannot fit or a kind is unknown."""
    if machines < 3 or not 2 <= min_machines < machines:
        raise ValueError(f"need >= 3 machines and 2 <= MIN < machines, got {machines}, "
                         f"{min_machines}")
    unknown = [k for k in kinds if k not in FAULTS]
    if unknown or not kinds:
        raise ValueError(f"fault kinds must be some of {', '.join(FAULTS)}, got "
                         f"{', '.join(kinds) or 'none'}")
    rng = random.Random(seed)
    kinds = [k for k in FAULTS if k in kinds for _ in range(per_kind)]
    rng.shuffle(kinds)
    span = duration - warm - tail
    if span <= gap * len(kinds):
        raise ValueError(f"{len(kinds)} faults do not fit in {duration:.0f} s (a fault every "
                         f"{gap:.0f} s at most, {warm:.0f} s warm-up, {tail:.0f} s at the end)")
    # Evenly spread slots, each jittered within its share: faults never bunch closer than gap.
    share = span / len(kinds)
    times = [warm + i * share + rng.uniform(0, share - gap) for i in range(len(kinds))]
    out_until = {}  # machine -> when the schedule expects it live again
    faults = []
    last = 0.0
    for at, kind in zip(times, kinds):
        need = 2 if kind == "second" else 1
        at = max(at, last + gap)
        # Later, when too few machines are expected live for this fault to leave >= MIN.
        while True:
            live = [m for m in range(1, machines) if out_until.get(m, 0) <= at]
            if 1 + len(live) - need >= min_machines or at > duration - tail:
                break
            at = min(t for t in out_until.values() if t > at) + 0.5
        if at > duration - tail or 1 + len(live) - need < min_machines:
            raise ValueError(f"seed {seed}: {len(kinds)} faults do not fit in {duration:.0f} s "
                             f"on {machines} machines with MIN {min_machines} (the {kind} fault "
                             f"#{len(faults) + 1} finds too few machines live)")
        last = at
        victims = rng.sample(live, need)
        f = {"at": round(at, 2), "kind": kind, "machine": victims[0], "replace": {}}
        if kind == "kill":
            f["replace"][victims[0]] = round(rng.uniform(3, 20), 2)
        elif kind == "link":
            f["down"] = round(rng.uniform(4, 10), 2)
            f["replace"][victims[0]] = round(f["down"] + 2, 2)
        elif kind == "stop":
            f["stopped"] = round(rng.uniform(2, 8), 2)
            f["replace"][victims[0]] = round(f["stopped"] + 2, 2)
        elif kind == "second":
            f["second"] = victims[1]
            f["into"] = round(rng.uniform(0, 2), 2)
            for m in victims:
                f["replace"][m] = round(rng.uniform(3, 20), 2)
        else:  # slow
            f["replace"][victims[0]] = round(rng.uniform(*slow_range(duration)), 2)
        for m, after in f["replace"].items():
            if kind != "stop":
                out_until[m] = at + after + JOIN_SECONDS
        faults.append(f)
    return faults


def counts(faults: list) -> dict:
    """Faults per kind, joins counting every replacement (stop: only if the machine left)."""
    out = {k: 0 for k in KINDS}
    for f in faults:
        out[f["kind"]] += 1
        if f["kind"] != "stop":
            out["join"] += len(f["replace"])
    return out


def describe(faults: list) -> str:
    """One line per fault, for the report."""
    lines = []
    for f in faults:
        extra = {"link": f"down {f.get('down')} s", "stop": f"stopped {f.get('stopped')} s",
                 "second": f"then m{f.get('second')} {f.get('into')} s into the regroup",
                 }.get(f["kind"], "")
        repl = ", ".join(f"m{m} +{s:.0f} s" for m, s in f["replace"].items())
        lines.append(f"{f['at']:7.1f} s  {f['kind']:6s} m{f['machine']} {extra}"
                     f"{'; ' if extra else ''}replacement {repl}")
    return "\n".join(lines)


if __name__ == "__main__":
    import sys
    seed, duration, machines, min_m, per = (int(x) for x in sys.argv[1:6])
    fs = draw(seed, duration, machines, min_m, per)
    print(describe(fs))
    print(counts(fs))
