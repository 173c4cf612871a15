#!/usr/bin/env python3
"""The GPU check's summary: reads what scripts/device-check/check left in --state (mode.tsv,
steps.tsv, device.json) and --out (tests_junit.xml, bench.json, the step logs) and the scaler
sequence the gpu tests recorded under --build, writes --out/summary.json and, unless --quiet,
prints the table. Exit code: 0 when the check passed, 1 otherwise.

A case counts as failed when CTest says it failed or did not run it (a missing executable, a
fixture whose setup failed), and, where a GPU is required (ACCEL_REQUIRE_GPU), when it skipped.
"""
import argparse
import json
import os
import re
import sys
import xml.etree.ElementTree as ET

REASON_PATTERNS = {
    "configure": r"CMake Error|Could not|not found|No such",
    "build": r"error:|FAILED:|undefined reference",
    "tests": r"\*\*\*Failed|\*\*\*Timeout|\*\*\*Not Run|Could not find executable|FAILED",
    "bench": r"Error|error|exit \d+",
}


def read_tsv(path):
    rows = []
    if os.path.exists(path):
        with open(path) as f:
            rows = [line.rstrip("\n").split("\t") for line in f if line.strip()]
    return rows


def read_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def reason_from_log(out, step):
    """The first few lines of the step's log that look like the cause, else its last lines."""
    path = os.path.join(out, f"{step}.log")
    if not os.path.exists(path):
        return ""
    with open(path, errors="replace") as f:
        lines = [line.rstrip() for line in f]
    pattern = re.compile(REASON_PATTERNS.get(step, r"error"))
    hits = [line for line in lines if pattern.search(line)]
    return " | ".join((hits or lines[-3:])[:4])[:600]


def case_detail(output):
    """The reason a case gives: a Python case's SKIPPED:/FAILED:/PASSED: line, or the line after
    GoogleTest's "file:line: Skipped" / "file:line: Failure"."""
    lines = output.splitlines()
    for i in range(len(lines) - 1, -1, -1):
        line = lines[i].strip()
        if line.startswith(("SKIPPED:", "FAILED:", "PASSED:")):
            return line[:300]
        if line.endswith((": Skipped", ": Failure")):
            after = [x.strip() for x in lines[i + 1:i + 3] if x.strip() not in ("", "Failed")]
            return (line.rsplit(":", 1)[1].strip() + ": " + " ".join(after[:1]))[:300]
    return ""


def read_cases(path):
    """[{name, result, seconds, detail}] from CTest's JUnit XML; result is passed, failed,
    skipped (the case said so: exit 77, SKIP_RETURN_CODE) or not run (CTest did not run it: a
    missing executable, a fixture whose setup failed)."""
    if not os.path.exists(path):
        return None
    cases = []
    for tc in ET.parse(path).getroot().iter("testcase"):
        status = tc.get("status", "")
        skipped = tc.find("skipped")
        output = tc.findtext("system-out") or ""
        if tc.find("failure") is not None or status == "fail":
            result = "failed"
        elif status == "run":
            result = "passed"
        elif skipped is not None and (skipped.get("message") or "").startswith("SKIP_"):
            result = "skipped"
        else:
            result = "not run"
        detail = case_detail(output)
        if result == "not run" and skipped is not None:
            detail = skipped.get("message") or detail
        cases.append({"name": tc.get("name"), "result": result,
                      "seconds": float(tc.get("time") or 0), "detail": detail})
    return cases


def nccl_verdict(cases):
    by = {c["name"]: c["result"] for c in cases or []}
    ours = [r for n, r in by.items() if n.startswith("GpuNcclTest.")]
    control = by.get("gpu_py_torch_nccl_control")
    if not ours or control is None:
        return "not checked"
    if all(r == "skipped" for r in ours + [control]):
        return "not checked (no GPU)"
    details = [c["detail"] for c in cases if c["name"].startswith("GpuNcclTest.")
               or c["name"] == "gpu_py_torch_nccl_control"]
    if all("skip counted as a failure" in d for d in details):
        return "NOT CHECKED: no GPU here (every skip counted as a failure)"
    ours_ok = all(r == "passed" for r in ours)
    if ours_ok and control == "passed":
        return "ok: libaccel's NCCL and torch's both pass"
    if control == "passed":
        return "OURS: torch's NCCL works here, libaccel's fails"
    if ours_ok:
        return "torch's control fails but libaccel's NCCL passes (see tests.log)"
    return "ENVIRONMENT: torch's NCCL fails too (NCCL_DEBUG=WARN lines in tests.log)"


def build_summary(a):
    mode = dict(r[:2] for r in read_tsv(os.path.join(a.state, "mode.tsv")) if len(r) >= 2)
    required = mode.get("required", "0") == "1"
    steps = []
    for row in read_tsv(os.path.join(a.state, "steps.tsv")):
        name, status, secs = row[0], row[1], int(row[2] or 0)
        reason = row[3] if len(row) > 3 else ""
        if status == "failed":
            reason = (reason + ": " if reason else "") + reason_from_log(a.out, name)
        steps.append({"step": name, "status": status, "seconds": secs, "reason": reason})
    cases = read_cases(os.path.join(a.out, "tests_junit.xml"))
    counts = {k: sum(1 for c in cases or [] if c["result"] == k)
              for k in ("passed", "failed", "skipped", "not run")}
    bench = read_json(os.path.join(a.out, "bench.json"))
    problems = [f"step {s['step']} {s['status']}: {s['reason']}" for s in steps
                if s["status"] in ("failed", "running")]
    problems += [f"step {s['step']} not run: {s['reason']}" for s in steps
                 if s["status"] == "not run"]
    problems += [f"case {c['name']} {c['result']}" for c in cases or []
                 if c["result"] in ("failed", "not run")]
    if required:
        problems += [f"case {c['name']} skipped on a machine that must run it: {c['detail']}"
                     for c in cases or [] if c["result"] == "skipped"]
    if cases is not None and not cases:
        problems.append("no test case ran")
    finished = any(s["step"] == "bench" and s["status"] in ("ok", "failed", "not run")
                   for s in steps)
    return {
        "verdict": "pass" if finished and not problems else ("fail" if finished else "running"),
        "gpu_seen": mode.get("gpu_seen") == "1", "gpu_required": required,
        "dry_run": mode.get("gpu_seen") != "1",
        "elapsed_seconds": a.elapsed,
        "first_failed_step": next((s for s in steps if s["status"] in ("failed", "not run")), None),
        "problems": problems, "steps": steps, "cases": cases, "case_counts": counts,
        "nccl": nccl_verdict(cases), "device": read_json(os.path.join(a.state, "device.json")),
        "scaler_sequence": read_tsv(os.path.join(a.build, "gpu_records", "scaler_sequence.tsv")),
        "bench": None if bench is None else {k: bench.get(k) for k in (
            "sizes", "rounds", "error", "median_samples_per_sec", "first_loss",
            "first_losses_agree", "fp16_vs_torch_amp", "fp32_vs_torch_fp32",
            "train_fp16_over_fp32", "torch_fp16_over_fp32", "goals", "main_job")},
    }


def fmt(v, spec=".2f", suffix="x"):
    return "-" if v is None else f"{v:{spec}}{suffix}"


def print_table(s):
    print("\n================ device check summary ================")
    dev = s["device"] or {}
    print(f"machine: GPU seen {s['gpu_seen']} ({dev.get('gpu_name') or 'none'}), every skip a "
          f"failure: {s['gpu_required']}, torch {dev.get('torch_version', '?')}, "
          f"{s['elapsed_seconds']} s in all")
    print(f"\n{'step':<11}{'status':<9}{'s':>5}  reason")
    for st in s["steps"]:
        print(f"{st['step']:<11}{st['status']:<9}{st['seconds']:>5}  {st['reason'][:90]}")
    if s["cases"] is not None:
        print(f"\n{'case':<63} {'result':<8}{'s':>6}  why")
        for c in s["cases"]:
            why = c["detail"] if c["result"] != "passed" else ""
            print(f"{c['name']:<63} {c['result']:<8}{c['seconds']:>6.1f}  {why[:100]}")
        n = s["case_counts"]
        print(f"cases: {n['passed']} passed, {n['failed']} failed, {n['skipped']} skipped, "
              f"{n['not run']} not run")
    print(f"NCCL: {s['nccl']}")
    b = s["bench"]
    if b and b.get("median_samples_per_sec"):
        m = b["median_samples_per_sec"]
        print(f"\nspeed ({b['rounds']} alternating rounds, medians, samples/s): "
              f"train.bin fp16 {fmt(m['train.bin fp16'], '.0f', '')} | torch AMP "
              f"{fmt(m['torch fp16'], '.0f', '')} | train.bin fp32 "
              f"{fmt(m['train.bin fp32'], '.0f', '')} | torch fp32 {fmt(m['torch fp32'], '.0f', '')}")
        print(f"train.bin fp16 / torch AMP {fmt(b['fp16_vs_torch_amp'])} (goal >= 1.00x); "
              f"fp16 / fp32: train.bin {fmt(b['train_fp16_over_fp32'])} (goal >= 1.50x), "
              f"torch {fmt(b['torch_fp16_over_fp32'])}; first losses agree "
              f"{b['first_losses_agree']}")
        if b.get("error"):
            print(f"bench: {b['error']}")
    mj = (b or {}).get("main_job")
    if mj:
        m = mj["median_samples_per_sec"]
        busy = mj.get("gpu_busy_percent")
        print(f"\nREADME main job's shape ({mj['rounds']} alternating rounds, medians, samples/s): "
              f"train.bin {fmt(m['train.bin'], '.0f', '')} | train.bin --cuda-graph off "
              f"{fmt(m.get('train.bin eager'), '.0f', '')} | torch AMP eager "
              f"{fmt(m['torch AMP eager'], '.0f', '')} | torch CUDA graph (bound) "
              f"{fmt(m['torch CUDA graph'], '.0f', '')}")
        print(f"train.bin / AMP eager {fmt(mj['vs_torch_amp_eager'])} (goal >= 5.00x); of the "
              f"graph bound {fmt(mj['of_cuda_graph_bound'])} (goal >= 0.50x); GPU busy during "
              f"the main job {fmt(busy, '.0f', ' %')} (goal >= 60 %)"
              f"{' (' + mj['gpu_busy_error'] + ')' if mj.get('gpu_busy_error') else ''}")
        if mj.get("error"):
            print(f"main job bench: {mj['error']}")
    if s["dry_run"]:
        print("\nDRY RUN: no GPU seen. Nothing here was verified on a GPU; the timings are CPU.")
    for p in s["problems"][:15]:
        print(f"PROBLEM: {p}")
    print(f"VERDICT: {s['verdict'].upper()}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--state", required=True)
    p.add_argument("--build", required=True)
    p.add_argument("--elapsed", type=int, default=0)
    p.add_argument("--quiet", action="store_true")
    a = p.parse_args()
    summary = build_summary(a)
    tmp = os.path.join(a.out, "summary.json.tmp")
    with open(tmp, "w") as f:
        json.dump(summary, f, indent=1)
    os.replace(tmp, os.path.join(a.out, "summary.json"))
    if not a.quiet:
        print_table(summary)
    return 0 if summary["verdict"] == "pass" else 1


if __name__ == "__main__":
    sys.exit(main())
