"""The model side's spin policy (python/mlbridge/_spin.py): spin only where
it measurably pays, never while the CPUs are crowded."""

from mlbridge._spin import SpinBudget, runnable_from_loadavg


def spins_after(budget, waits, spin_s, sleep_s):
    """Feeds waits (spinning ones take spin_s, sleeping ones sleep_s);
    how many of the last 32 spun."""
    spun = 0
    for i in range(waits):
        spinning = budget.next() > 0
        budget.update(spin_s if spinning else sleep_s)
        if i >= waits - 32:
            spun += spinning
    return spun


def test_spins_while_spinning_is_clearly_faster_and_answered_in_time():
    budget = SpinBudget(50e-6, crowded=lambda: False)
    assert spins_after(budget, 200, 5e-6, 40e-6) == 30  # every 16th tries sleeping


def test_stops_spinning_when_most_spins_run_out():
    budget = SpinBudget(50e-6, crowded=lambda: False)
    assert spins_after(budget, 200, 60e-6, 200e-6) == 2


def test_never_spins_while_the_cpus_are_crowded():
    budget = SpinBudget(50e-6, crowded=lambda: True)
    assert spins_after(budget, 200, 5e-6, 40e-6) == 0


def test_reads_the_runnable_count_of_loadavg():
    assert runnable_from_loadavg(b"0.52 0.41 0.30 3/241 1234\n") == 3
    assert runnable_from_loadavg(b"15.40 8.59 5.81 12/193 18459") == 12
    assert runnable_from_loadavg(b"0.00 0.00 0.00") == -1
    assert runnable_from_loadavg(b"") == -1
