"""The stock size flags a user would try on top of ``clang-19 -Oz``, and the
"best flags" baseline: the combination of them that gives the smallest
total ``.text`` on the corpus's VALIDATION libraries, chosen there once and
then reported on held-out code like every other configuration.

* ``mergefunc``: ``-Xclang -fmerge-functions`` (a cc1 flag in clang 19; the
  driver rejects ``-fmerge-functions`` and ``-mllvm -enable-merge-functions``
  does nothing under clang);
* ``machine-outliner``: ``-mllvm -enable-machine-outliner=always`` (x86-64
  does not outline at ``-Oz`` by default);
* ``ir-outliner``: ``-mllvm -ir-outliner``.

The choice is recorded in ``results/size/best_flags_llvm<major>.json`` (the
validation totals of all 8 combinations), written by
``python -m mlbridge.train size-report --select-flags``.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from pathlib import Path
from typing import Dict, List, Sequence

from ..toolchain import toolchain
from .evaluate import PLAIN, Config, measure, summarize

__all__ = ["FLAGS", "flag_configs", "flag_config", "select_best_flags", "best_flags_file",
           "load_best_flags", "best_flags_config", "RESULTS_DIR"]

#: Each stock size flag, by the name the tables use.
FLAGS: Dict[str, tuple] = {
    "mergefunc": ("-Xclang", "-fmerge-functions"),
    "machine-outliner": ("-mllvm", "-enable-machine-outliner=always"),
    "ir-outliner": ("-mllvm", "-ir-outliner"),
}

#: Where the measured size results live (committed).
RESULTS_DIR = Path(__file__).resolve().parents[3] / "results" / "size"


def flag_config(names: Sequence[str], base: Config = PLAIN) -> Config:
    """``base`` plus the flags ``names`` (in :data:`FLAGS` order); named
    ``-Oz`` for none, else ``+a+b`` after ``base``'s name."""
    names = [n for n in FLAGS if n in names]
    if not names:
        return base
    label = "+".join(names)
    name = f"-Oz +{label}" if base == PLAIN else f"{base.name} +{label}"
    return base.with_flags(name, [f for n in names for f in FLAGS[n]])


def flag_configs() -> List[Config]:
    """Plain -Oz and every combination of :data:`FLAGS` (8)."""
    return [flag_config(c) for k in range(len(FLAGS) + 1)
            for c in itertools.combinations(FLAGS, k)]


def select_best_flags(rows) -> dict:
    """The combination with the smallest total ``.text`` over the units of
    ``rows`` (:func:`mlbridge.train.evaluate.measure` of :func:`flag_configs`,
    on the validation split) where all compiled; ties go to fewer flags."""
    configs = flag_configs()
    summary = summarize(rows, [c.name for c in configs])
    total = summary["total"]
    if not total.units:
        raise ValueError("no validation unit compiled with every flag combination")
    best = min(configs, key=lambda c: (total.text[c.name], len(c.flags)))
    return {"best": [n for n in FLAGS if set(FLAGS[n]) <= set(best.flags)],
            "best_name": best.name, "units": total.units,
            "errors": summary["errors"],
            "validation_text": {c.name: total.text[c.name] for c in configs},
            "validation_cpu_ratio": {c.name: round(total.cpu_ratio(c.name), 3)
                                     for c in configs}}


def best_flags_file(major: int = None) -> Path:
    return RESULTS_DIR / f"best_flags_llvm{major or toolchain().major}.json"


def load_best_flags(major: int = None) -> List[str]:
    """The flag names chosen on validation for LLVM ``major`` (default: the
    toolchain's); raises FileNotFoundError naming the command that makes it."""
    path = best_flags_file(major)
    try:
        return list(json.loads(path.read_text())["best"])
    except FileNotFoundError:
        raise FileNotFoundError(
            f"{path} is missing: python -m mlbridge.train size-report --select-flags "
            f"chooses the best flags on the validation split") from None


def best_flags_config(major: int = None, base: Config = PLAIN) -> Config:
    """``base`` plus the validation-chosen flags, named "best flags"
    (``base`` plain) or ``<base> + best flags``."""
    cfg = flag_config(load_best_flags(major), base)
    name = "best flags" if base == PLAIN else f"{base.name} + best flags"
    return dataclasses.replace(cfg, name=name)


def measure_flags(modules, **kwargs):
    """:func:`mlbridge.train.evaluate.measure` of every flag combination."""
    return measure(modules, flag_configs(), **kwargs)


# ---- the size tables of docs/results.md ---------------------------------------------

#: Both plugins in one ``clang -Oz`` process, built-in models.
def combined_config() -> Config:
    return Config("combined", plugins=("inliner", "phase-order"))


def report_configs(single_flags: bool = False) -> List[Config]:
    """The held-out table's configurations: plain -Oz, best flags, each
    plugin, both, both + best flags (and each flag alone). A phase-ordering
    policy trained to start from the flags (its ``start``) has them in
    "combined" already; then there is no "combined + best flags" (the flags
    would run twice)."""
    from .evaluate import INLINER, PHASE_ORDER
    from .phase_order import episode_start
    both = combined_config()
    out = [PLAIN, best_flags_config(), INLINER, PHASE_ORDER, both]
    if not episode_start(both):
        out.append(best_flags_config(base=both))
    if single_flags:
        out += [flag_config([n]) for n in FLAGS]
    return out


#: The configurations of the LTO table (each plugin alone is in the per-unit one).
LTO_CONFIGS = ("-Oz", "best flags", "combined", "combined + best flags")


def select_flags(modules, **kwargs) -> dict:
    """Measures every combination on ``modules`` (the validation split),
    writes :func:`best_flags_file` and returns what it recorded."""
    from .results import write_atomically
    rows = measure_flags(modules, **kwargs)
    record = dict(select_best_flags(rows), compiler=toolchain().version,
                  command="python -m mlbridge.train size-report --select-flags",
                  split="validation", flags={n: list(f) for n, f in FLAGS.items()})
    path = best_flags_file()
    path.parent.mkdir(parents=True, exist_ok=True)

    def write(tmp):
        Path(tmp).write_text(json.dumps(record, indent=1) + "\n")
    write_atomically(path, write)
    return record


def doc_tables(summary, lto_summary=None) -> Dict[str, str]:
    """The Markdown tables of docs/results.md from :func:`mlbridge.train.
    evaluate.summarize` of :func:`report_configs` (and of the LTO run)."""
    from .evaluate import markdown_table as full_table
    both, both_best = "combined", "combined + best flags"
    tables = {}

    def markdown_table(s, names, deltas, cpu=()):  # what was measured of it
        have = set(s["names"])
        return full_table(s, [n for n in names if n in have],
                          [(n, r) for n, r in deltas if n in have and r in have],
                          [n for n in cpu if n in have])
    for policy in ("phase ordering", "inliner"):
        tables[policy] = markdown_table(
            summary, [PLAIN.name, "best flags", policy],
            [("best flags", PLAIN.name), (policy, PLAIN.name), (policy, "best flags")],
            cpu=[policy])
    tables["combined"] = markdown_table(
        summary, [PLAIN.name, "best flags", "inliner", "phase ordering", both, both_best],
        [(both, PLAIN.name), (both, "best flags"), (both_best, PLAIN.name),
         (both_best, "best flags")], cpu=[both, both_best])
    singles = [c.name for c in flag_configs() if c.name in summary["names"]
               and c.name != PLAIN.name]
    if singles:
        tables["flags"] = markdown_table(summary, [PLAIN.name] + singles + ["best flags"],
                                         cpu=singles + ["best flags"])
    if lto_summary is not None:
        tables["lto"] = markdown_table(
            lto_summary, list(LTO_CONFIGS),
            [("best flags", PLAIN.name), (both, PLAIN.name), (both, "best flags"),
             (both_best, PLAIN.name), (both_best, "best flags")])
    return tables


def doc_tables_from(path) -> Dict[str, str]:
    """:func:`doc_tables` of a results file written by ``size-report``."""
    from .evaluate import summarize, summarize_lto
    data = json.loads(Path(path).read_text())
    summary = summarize(data["rows"], list(data["configs"]))
    lto = data.get("lto_results")
    lto_summary = (summarize_lto(lto, [n for n in LTO_CONFIGS if n in next(iter(lto.values()))])
                   if lto else None)
    return doc_tables(summary, lto_summary)
