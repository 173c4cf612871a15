#!/usr/bin/python3
"""in_place_check.py on synthetic records and archives: a scale-down whose killed ranks recorded
every step they trained passes; a record line missing at step K (no fill from the reference), a
sample changed, a NaN parameter, an infinite one and a NaN param_checksum each fail."""
import math
import os
import struct
import sys
import tempfile
import unittest
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import in_place_check as check  # noqa: E402

SAMPLES = 24
BATCH = 2


def split(world, steps, first_step, start):
    """{rank: ["epoch step samples..."]} for `steps` steps at `world` from step `first_step`,
    sample position `start` (in an epoch of SAMPLES in order, strided over the ranks)."""
    lines = {r: [] for r in range(world)}
    pos = start
    for step in range(first_step, first_step + steps):
        epoch = pos // SAMPLES
        base = pos % SAMPLES
        for r in range(world):
            samples = [base + r + world * i for i in range(BATCH)]
            lines[r].append(" ".join(str(x) for x in [epoch, step] + samples))
        pos += world * BATCH
    return lines, pos


def write(prefix, lines):
    for r, rank_lines in lines.items():
        with open(f"{prefix}.{r}", "a") as f:
            f.write("".join(line + "\n" for line in rank_lines))


class SampleRecordTest(unittest.TestCase):
    """World 6 for K = 4 steps (48 samples: 2 epochs), then world 4 for 6 steps (48 more)."""

    K, STEPS = 4, 10

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        d = self.dir.name
        self.rec, self.ref6, self.ref4 = (os.path.join(d, n) for n in ("rec", "ref6", "ref4"))
        old, pos = split(6, self.K, 1, 0)
        new, _ = split(4, self.STEPS - self.K, self.K + 1, pos)
        write(self.ref6, old)
        write(self.ref4, new)
        # The job: the same; the survivors had started step K + 1 at world 6 (written again at
        # world 4), the killed ranks 4 and 5 too (no step of the job).
        in_flight, _ = split(6, 1, self.K + 1, pos)
        job_old = {r: old[r] + in_flight[r] for r in range(6)}
        self.job_old, self.job_new = job_old, new

    def tearDown(self):
        self.dir.cleanup()

    def run_check(self):
        notes = []
        complete, twice = check.check_samples(self.rec, self.K, (self.ref6, range(6)),
                                              (self.ref4, range(4)), notes, self.STEPS, SAMPLES)
        return notes, complete, twice

    def test_every_step_recorded_passes(self):
        write(self.rec, self.job_old)
        write(self.rec, self.job_new)
        notes, complete, twice = self.run_check()
        self.assertEqual(notes, [])
        self.assertEqual(complete, [0, 1, 2])
        self.assertEqual(twice, [])

    def test_killed_rank_without_step_k_fails(self):
        self.job_old[5] = [line for line in self.job_old[5]
                           if int(line.split()[1]) != self.K]
        write(self.rec, self.job_old)
        write(self.rec, self.job_new)
        notes, _, _ = self.run_check()
        self.assertTrue(any("rank 5 recorded no line" in n and f"[{self.K}]" in n for n in notes),
                        notes)

    def test_survivor_without_a_later_step_fails(self):
        self.job_new[2] = self.job_new[2][:-1]
        write(self.rec, self.job_old)
        write(self.rec, self.job_new)
        notes, _, _ = self.run_check()
        self.assertTrue(any("after step K: rank 2 recorded no line" in n for n in notes), notes)

    def test_a_sample_trained_twice_fails(self):
        line = self.job_new[0][0].split()
        line[2] = line[3]
        self.job_new[0][0] = " ".join(line)
        write(self.rec, self.job_old)
        write(self.rec, self.job_new)
        notes, _, twice = self.run_check()
        self.assertTrue(any("differs from the reference" in n for n in notes), notes)
        self.assertNotEqual(twice, [])


def archive(path, values):
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("archive/data/0", struct.pack(f"{len(values)}f", *values))


class TensorTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.a, self.b = (os.path.join(self.dir.name, n) for n in ("a.pt", "b.pt"))

    def tearDown(self):
        self.dir.cleanup()

    def test_equal_and_close(self):
        archive(self.a, [1.0, -2.0, 3.0])
        archive(self.b, [1.0, -2.0, 3.0])
        self.assertEqual(check.tensor_rel_diff(self.a, self.b), 0.0)
        archive(self.a, [1.0, -2.0, 3.0003])
        self.assertAlmostEqual(check.tensor_rel_diff(self.a, self.b), 1e-4, delta=1e-6)

    def test_nan_counts_as_different(self):
        for bad in (math.nan, math.inf):
            archive(self.a, [1.0, bad, 3.0])
            archive(self.b, [1.0, -2.0, 3.0])
            self.assertEqual(check.tensor_rel_diff(self.a, self.b), math.inf, bad)
            self.assertEqual(check.tensor_rel_diff(self.b, self.a), math.inf, bad)
            archive(self.b, [1.0, bad, 3.0])  # both broken the same way: still not equal
            self.assertEqual(check.tensor_rel_diff(self.a, self.b), math.inf, bad)

    def test_nan_checksum_is_not_equal(self):
        self.assertFalse(check.checksum_rel(check.checksum('"param_checksum": nan'), 1.5) < 1e-6)
        self.assertFalse(check.checksum_rel(None, 1.5) < 1e-6)
        self.assertEqual(check.checksum_rel(check.checksum('"param_checksum": 1.5'), 1.5), 0.0)


if __name__ == "__main__":
    unittest.main()
