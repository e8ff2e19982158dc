"""The one results writer of a training run: ``<out>/log.jsonl`` (one JSON
record per stage or iteration, flushed as it is written) and
``<out>/summary.json``. Nothing is created before the first record, so a
run that fails before it has measured anything leaves no artefact."""

from __future__ import annotations

import contextlib
import json
import os
import time

from ..cli import naming
from ..errors import MLBridgeError

__all__ = ["JsonFile", "RunResults", "TrainingError", "plot_learning_curve",
           "write_atomically"]


class JsonFile:
    """Saving and loading for a class with ``to_dict()`` and a
    ``from_dict(d)`` classmethod (the trained policies): one JSON file,
    written atomically."""

    def save(self, path):
        def write(tmp):
            with open(tmp, "w") as f:
                json.dump(self.to_dict(), f)
        write_atomically(path, write)

    @classmethod
    def load(cls, path):
        with open(path) as f:
            return cls.from_dict(json.load(f))


class TrainingError(MLBridgeError, RuntimeError):
    """Training cannot produce a meaningful result (says what failed)."""


def write_atomically(path, write):
    """Calls ``write(tmp_path)`` and renames the file to ``path``."""
    path = os.fspath(path)
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        with naming(path):
            write(tmp)
            os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


class RunResults(contextlib.AbstractContextManager):
    """The output folder of one run (as a context manager: closes the log)."""

    def __init__(self, out_dir):
        self.out_dir = os.fspath(out_dir)
        self._log = None

    def path(self, name):
        os.makedirs(self.out_dir, exist_ok=True)
        return os.path.join(self.out_dir, name)

    def log(self, record):
        """Appends ``record`` (with a timestamp) to this run's log.jsonl."""
        if self._log is None:
            self._log = open(self.path("log.jsonl"), "w")
        record = dict(record, time=time.strftime("%Y-%m-%dT%H:%M:%S"))
        with naming(self._log.name):
            self._log.write(json.dumps(record) + "\n")
            self._log.flush()
        return record

    def summary(self, summary):
        """Writes summary.json and returns ``summary``."""
        def write(tmp):
            with open(tmp, "w") as f:
                json.dump(summary, f, indent=2)
        write_atomically(self.path("summary.json"), write)
        return summary

    def close(self):
        if self._log is not None:
            log, self._log = self._log, None
            with naming(log.name):  # what a failed write left behind fails again here
                log.close()

    def __exit__(self, *exc):
        self.close()


def plot_learning_curve(path, series, *, baseline, xlabel, ylabel, title):
    """A training run's ``curve.png``: each of ``series`` (xs, ys, matplotlib
    format, label) against iterations, with the baseline the ratios are
    taken to (named ``baseline``) as a dotted line at 1."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for xs, ys, fmt, label in series:
        ax.plot(xs, ys, fmt, label=label)
    ax.axhline(1.0, color="gray", lw=0.8, ls=":", label=baseline)
    ax.set(xlabel=xlabel, ylabel=ylabel, title=title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
