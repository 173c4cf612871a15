#!/usr/bin/python3
"""Every fault scenario of run_faults.py runs in CI: its name is in a `--scenarios` list of
tests/faults/CMakeLists.txt, or among the cases that the hang_trials.py entry's `--trials N`
draws in turn (its first N), or it is the full size of one that is (REDUCED). A scenario no CTest
entry runs is checked by nothing: add it to an entry (one trial, reduced if need be) or delete it
with the reason in the commit."""
import os
import re
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from hang_trials import CASES  # noqa: E402
from scenarios import SCENARIOS  # noqa: E402
from security import SECURITY_SCENARIOS  # noqa: E402

# A person's full size -> the reduced scenario CI runs (the same function, smaller arguments).
REDUCED = {"flood-full": "flood"}


def in_ci():
    with open(os.path.join(HERE, "CMakeLists.txt")) as f:
        text = f.read()
    named = {name for names in re.findall(r"--scenarios\s+([\w,-]+)", text)
             for name in names.split(",") if name}
    for trials in re.findall(r"hang_trials\.py[^)]*?--trials\s+(\d+)", text):
        named |= {CASES[i % len(CASES)] for i in range(int(trials))}
    return named


class ScenariosInCiTest(unittest.TestCase):
    def test_every_scenario_runs_in_ci(self):
        every = set(SCENARIOS) | set(SECURITY_SCENARIOS)
        named = in_ci()
        self.assertEqual(named - every, set(), "CMakeLists.txt names unknown scenarios")
        left_out = {s for s in every - named if REDUCED.get(s) not in named}
        self.assertEqual(left_out, set(), "scenarios no CTest entry runs")

    def test_the_reduced_are_the_same_function(self):
        every = dict(SCENARIOS, **SECURITY_SCENARIOS)
        for full, reduced in REDUCED.items():
            self.assertEqual(every[full].__qualname__, every[reduced].__qualname__)


if __name__ == "__main__":
    unittest.main()
