"""The progress record a Python worker writes under accel-launch: the file and its words.

The same record libaccel keeps (common/progress_record.h): six little-endian 64-bit words in a
shared mapping of the file, each stored whole, so the launcher reads each word old or new:
  0 optimizer steps      1 collectives started    2 collectives done
  3 wait nanoseconds     (time blocked in communication, waits that overlap counted once)
  4 samples              5 wait since (CLOCK_MONOTONIC nanoseconds when the wait in progress
                           began, 0 = none)
What is counted, and when, is _accel_launch_progress's business.
One process owns a record: the first to take an exclusive flock on the file. A process forked
from it writes nothing (it is turned off in the child), and a Python process it starts cannot
take the lock.
"""
import os
import threading
import time

_STEP, _STARTED, _DONE, _WAIT_NS, _SAMPLES, _WAIT_SINCE = range(6)
_WORDS = 6


class Record:
    """The mapped record and the counts behind it. Thread-safe (one lock). Raises from the
    constructor when the file cannot be opened and mapped, or another process owns it."""

    def __init__(self, path):
        import ctypes
        import fcntl
        import mmap

        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # another process owns it: raises
            os.ftruncate(fd, 0)
            os.ftruncate(fd, _WORDS * 8)
            self._map = mmap.mmap(fd, _WORDS * 8, mmap.MAP_SHARED,
                                  mmap.PROT_READ | mmap.PROT_WRITE)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd  # held open: the lock lasts as long as the process
        # A ctypes store of an aligned 64-bit word is one machine store: a reader sees it old or
        # new, as libaccel's atomic stores.
        self._words = (ctypes.c_uint64 * _WORDS).from_buffer(self._map)
        self._lock = threading.Lock()
        self._counts = [0] * _WORDS
        self._waiting = 0
        self._since = 0
        self.live = True
        os.register_at_fork(after_in_child=self._forked)

    def _forked(self):
        self.live = False  # the parent's record; the child's work is not the rank's

    def _add(self, word, n=1):
        self._counts[word] += n
        self._words[word] = self._counts[word]

    def _begin_wait(self):
        self._waiting += 1
        if self._waiting == 1:
            self._since = time.monotonic_ns()
            self._words[_WAIT_SINCE] = self._since

    def _end_wait(self):
        if self._waiting > 0:
            self._waiting -= 1
            if self._waiting == 0:
                self._words[_WAIT_SINCE] = 0
                self._add(_WAIT_NS, time.monotonic_ns() - self._since)

    def step(self):
        """Counts one optimizer step."""
        if self.live:
            with self._lock:
                self._add(_STEP)

    def started(self, timed):
        """Counts a collective started; `timed`: the program now waits for it."""
        if self.live:
            with self._lock:
                if timed:
                    self._begin_wait()
                self._add(_STARTED)

    def done(self, timed):
        """Counts a collective done; `timed` ends the wait its start began."""
        if self.live:
            with self._lock:
                if timed:
                    self._end_wait()
                self._add(_DONE)

    def samples(self, n):
        """Adds n samples (n > 0)."""
        if self.live and n > 0:
            with self._lock:
                self._add(_SAMPLES, n)
