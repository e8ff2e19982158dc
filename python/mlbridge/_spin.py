"""Bounded, adaptive spinning before sleeping (the Python twin of
src/transport/spin_wait.h).

Polling for a few µs avoids the wake-up a sleeping reader pays (tens of µs on
an idle VM); on a loaded machine the same polling steals the CPU the peer
needs. The budget (at most ``max_seconds``) halves after a wait the spin
could not have shortened and doubles after one that ended soon after the
spin gave up; at zero it still probes every 64th wait.
"""

import _thread

__all__ = ["SpinBudget", "full_fence"]

_PROBE_EVERY = 64
_fence_lock = _thread.allocate_lock()


def full_fence():
    """A full memory barrier on x86-64: CPython's lock operations are
    lock-prefixed atomic instructions (sem_trywait / sem_post), which order
    every earlier store before every later load."""
    if _fence_lock.acquire(False):
        _fence_lock.release()


class SpinBudget:
    __slots__ = ("max", "budget", "idle")

    def __init__(self, max_seconds):
        self.max = max_seconds
        self.budget = max_seconds
        self.idle = 0

    def next(self):
        """Seconds the next wait should spin."""
        if self.budget == 0 and self.max > 0:
            self.idle += 1
            if self.idle % _PROBE_EVERY == 0:
                return self.max
        return self.budget

    def update(self, caught_by_spin, waited):
        if caught_by_spin:
            self.budget = max(self.budget, min(self.max, waited * 2))
        elif waited <= self.max:
            self.budget = min(self.max, max(self.budget * 2, 1e-6))
        else:
            self.budget = self.budget / 2 if self.budget > 1e-6 else 0
