"""What rdzv_intruder's tries and a third-party trial must show: every try refused, the job
unharmed (pure functions, unit-tested by third_party_verdict_test.py)."""


# The tries rdzv_intruder makes (each once without a token, once with a guessed one).
INTRUDER_TRIES = [f"{label} {what}" for label in ("no-token", "guessed-token")
                  for what in ("store-get", "store-set", "join", "report-failure")]


def intruder_verdict(returncode: int, stdout: str) -> tuple:
    """Judges rdzv_intruder's run: (every try refused for want of the token, why not). Each try
    in INTRUDER_TRIES must have printed exactly one line, REFUSED, and the exit code must be 0: a
    try that got through (ALLOWED), one that never ran, or a server that did not answer (ALLOWED
    with UNAVAILABLE) fails it."""
    lines = [line for line in stdout.splitlines() if line.strip()]
    problems = []
    for want in INTRUDER_TRIES:
        found = [line for line in lines if line.split(" ")[1:3] == want.split(" ")]
        if len(found) != 1:
            problems.append(f"{want}: {len(found)} lines")
        elif not found[0].startswith("REFUSED "):
            problems.append(found[0])
    others = [line for line in lines if line.split(" ")[0] not in ("REFUSED", "ALLOWED")]
    problems += [f"unexpected line {line!r}" for line in others]
    if returncode != 0:
        problems.append(f"exit {returncode}")
    return not problems, "; ".join(problems)


def third_party_verdict(intruder_rc: int, intruder_out: str, codes: list, checksum: str,
                        clean: str, logs: str) -> tuple:
    """(root_ok, ok, note) of a third-party trial: root_ok when every intruder try was refused;
    ok when the job then finished on both machines with the undisturbed run's checksum and its
    logs show no trace of the intruder's forged failure report."""
    root_ok, why = intruder_verdict(intruder_rc, intruder_out)
    problems = [] if root_ok else [f"intruder: {why}"]
    if codes != [0, 0]:
        problems.append(f"job exit {codes}, not [0, 0]")
    if not checksum or checksum != clean:
        problems.append(f"checksum {checksum!r} vs clean {clean!r}")
    if "forged by rdzv_intruder" in logs:
        problems.append("the intruder's forged failure report reached the job")
    return root_ok, not problems, "; ".join(problems)
