"""Bounded spinning before sleeping, where it pays (the Python twin of
src/transport/spin_wait.h).

Polling for a few µs avoids the wake-up a sleeping reader pays (tens of µs on
an idle VM); on a loaded machine the same polling steals the CPU the peer
needs, and waits get longer. :class:`SpinBudget` keeps an average of the
whole wait with spinning (up to ``max_seconds``) and with sleeping at once,
uses the faster mode (spinning must win by 1/8) and tries the other one
every 16th wait so both averages stay current.

The Python side also spins only while at least half of its spins see the
request arrive within the budget. A peer that thinks longer than the budget
between requests (a stock LLVM computing its next features) makes every
spin a pure loss, and one the wait averages do not show: the CPU the spin
burns is taken from that peer on a busy machine (an 11,243-request llc-19
compilation took 1.7 s served with spinning against 1.0 s without). After
its first few µs (``PAUSE_ONLY``) a spin yields the CPU between looks, and
nothing spins while more tasks are runnable than there are CPUs plus one
(:func:`cpus_crowded`).
"""

import _thread
import os
import time

__all__ = ["SpinBudget", "full_fence", "PAUSE_ONLY", "cpus_crowded", "runnable_from_loadavg"]

_TRY_OTHER_EVERY = 16
# A spin looks without pause for this long, then gives the CPU away between
# looks (os.sched_yield): the peer it waits for may need that CPU (several
# compilers and one model on as many CPUs).
PAUSE_ONLY = 3e-6
_fence_lock = _thread.allocate_lock()


_CPUS = os.cpu_count() or 1
_LOOK_EVERY = 0.02
_crowding = [0.0, False]  # next look (monotonic s), last answer


def runnable_from_loadavg(line):
    """The runnable-task count of a /proc/loadavg line (bytes), or -1."""
    fields = line.split()
    if len(fields) < 4 or b"/" not in fields[3]:
        return -1
    runnable = fields[3].split(b"/")[0]
    return int(runnable) if runnable.isdigit() else -1


def cpus_crowded():
    """True while more tasks are runnable than there are CPUs plus one (read
    at most every 20 ms): a spin then takes CPU time someone -- often the
    peer it waits for -- needs. False when it cannot be read."""
    now = time.monotonic()
    if now < _crowding[0]:
        return _crowding[1]
    _crowding[0] = now + _LOOK_EVERY
    try:
        fd = os.open("/proc/loadavg", os.O_RDONLY | os.O_CLOEXEC)
        try:
            line = os.read(fd, 128)
        finally:
            os.close(fd)
    except OSError:
        line = b""
    _crowding[1] = runnable_from_loadavg(line) > _CPUS + 1
    return _crowding[1]


def full_fence():
    """A full memory barrier on x86-64: CPython's lock operations are
    lock-prefixed atomic instructions (sem_trywait / sem_post), which order
    every earlier store before every later load."""
    if _fence_lock.acquire(False):
        _fence_lock.release()


class SpinBudget:
    __slots__ = ("max", "crowded", "spin_avg", "sleep_avg", "hit_avg", "waits", "spinning")

    def __init__(self, max_seconds, crowded=cpus_crowded):
        self.max = max_seconds
        self.crowded = crowded
        self.spin_avg = self.sleep_avg = None
        self.hit_avg = 1.0  # share of spins the request arrived in
        self.waits = 0
        self.spinning = False

    def _spinning_wins(self):
        if self.hit_avg < 0.5:
            return False
        return (self.spin_avg is None or self.sleep_avg is None
                or self.spin_avg < self.sleep_avg * 7 / 8)

    def next(self):
        """Seconds the next wait should spin (``max_seconds`` or 0)."""
        if not self.max:
            return 0
        if self.crowded():
            self.spinning = False
            return 0
        self.waits += 1
        wins = self._spinning_wins()
        self.spinning = (not wins) if self.waits % _TRY_OTHER_EVERY == 0 else wins
        return self.max if self.spinning else 0

    def update(self, waited):
        """After the wait next() was asked for: how long it took in all."""
        if self.spinning:
            self.spin_avg = waited if self.spin_avg is None else \
                self.spin_avg + (waited - self.spin_avg) / 8
            self.hit_avg += ((waited <= self.max) - self.hit_avg) / 8
        else:
            self.sleep_avg = waited if self.sleep_avg is None else \
                self.sleep_avg + (waited - self.sleep_avg) / 8
