"""What the loop-distribution plugin does with real loops: how many innermost
loops it sees, how many it hands to the model, what the model does with
them, and why it declines the others, by reason.

Read from the plugin's log (``MLBRIDGE_LD_LOG``: one JSON line per
innermost loop) while compiling real code the way a user does:

* the corpus's libraries, unit by unit (``clang-19 -O3 -c`` with the
  library's own flags and ``-fpass-plugin``);
* the real projects of :mod:`mlbridge.builds`, built by their own build
  systems with the ``loopdist`` configuration (docs/deployment.md).

``python -m mlbridge.train loop-distribution coverage`` writes the counts
as JSON and prints the table (docs/loop-distribution.md, "Coverage").
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Dict, Iterable, List, Optional

__all__ = ["reason_class", "summarize", "corpus_loops", "project_loops", "markdown"]

COMPILE_TIMEOUT = 300.0


def reason_class(reason: str) -> str:
    """A decline reason with its numbers taken out ("more than 64
    instructions" -> "more than N instructions"), so reasons group."""
    return re.sub(r"\d+", "N", reason).strip() or "(none)"


def summarize(records: Iterable[dict]) -> dict:
    """Counts of one source's log records: ``loops``, ``to_model`` (the
    loops with two or more nodes the model was asked about), each
    ``result`` (distributed, unchanged, declined, invalid, error) and, for
    the loops not distributed, the reasons."""
    loops = to_model = 0
    results: Counter = Counter()
    reasons: Counter = Counter()
    for r in records:
        loops += 1
        to_model += r.get("result") != "declined" and int(r.get("nodes", 0)) >= 2
        results[r.get("result", "?")] += 1
        if r.get("result") != "distributed" and r.get("reason"):
            reasons[reason_class(r["reason"])] += 1
    return {"loops": loops, "to_model": to_model, "results": dict(results),
            "reasons": dict(reasons)}


def _read_log(path: Path) -> List[dict]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def corpus_loops(libraries: Optional[List[str]] = None, split: Optional[str] = None,
                 plugin=None, clang: str = "clang-19") -> Dict[str, dict]:
    """Per corpus library, the summary of its units compiled at ``-O3``
    with the plugin (its compiled-in model), as a user's build would.
    A unit that does not compile is listed in ``failed_units`` with the
    last line clang printed."""
    from ...corpus import Corpus
    from ...toolchain import plugin_env
    from . import find_plugin
    plugin = find_plugin(plugin)
    corpus = Corpus.load()
    corpus.fetch(libraries)  # verified sources, as every corpus build reads them
    out: Dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="mlbridge-ld-coverage-") as tmp:
        for lib in corpus.select(libraries):
            if split is not None and lib.split != split:
                continue
            log = Path(tmp) / f"{lib.name}.jsonl"
            failed = []
            for m in corpus.modules(libraries=[lib.name], include_mismatched=True):
                env = {k: v for k, v in os.environ.items() if not k.startswith("MLBRIDGE_")}
                env["MLBRIDGE_LD_LOG"] = str(log)
                cmd = [clang, "-O3", *m.flags, f"-fpass-plugin={plugin}", "-c", str(m.source),
                       "-o", os.devnull]
                r = subprocess.run(cmd, env=plugin_env(cmd, env), capture_output=True,
                                   text=True, timeout=COMPILE_TIMEOUT)
                if r.returncode != 0:  # named with clang's last words: a crash is a bug
                    tail = r.stderr.strip().splitlines()[-1:] or [f"exit {r.returncode}"]
                    failed.append({"unit": m.name, "error": tail[0][:300]})
            out[lib.name] = dict(summarize(_read_log(log)), split=lib.split, kind="corpus",
                                 failed_units=failed)
    return out


def project_loops(projects: Optional[List[str]] = None, llvm: int = 19, work=None,
                  build_dir=None) -> Dict[str, dict]:
    """Per real project (``"<name> (project)"``), the summary of its own build with the ``loopdist``
    configuration (its tests run too: a coverage count of a build whose
    tests fail is reported with them)."""
    from ...builds import configs, projects as known
    from ...builds.build import build_project
    comp = configs.compilers(llvm, build_dir)
    out: Dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="mlbridge-ld-coverage-") as tmp:
        root = Path(work) if work else Path(tmp)
        for pr in known.select(projects):
            log = Path(tmp) / f"{pr.name}.jsonl"
            cfg = configs.by_name("loopdist")
            cfg = replace(cfg, env=dict(cfg.env, MLBRIDGE_LD_LOG=str(log)))
            rec = build_project(pr, cfg, comp, root / pr.name)
            # keyed apart from the corpus library of the same name (zlib, lz4, ...)
            out[f"{pr.name} (project)"] = dict(summarize(_read_log(log)), kind="project", llvm=llvm,
                                build_ok=rec["ok"], tests_passed=rec["tests_passed"],
                                tests_total=rec["tests_total"])
    return out


def markdown(per: Dict[str, dict], top: int = 8) -> str:
    """One row per source; the reasons most often given, over all sources,
    as columns (the rest summed in "other")."""
    every: Counter = Counter()
    for s in per.values():
        every.update(s["reasons"])
    named = [r for r, _ in every.most_common(top)]
    head = ["source", "kind", "innermost loops", "to the model", "distributed",
            "model kept one loop"] + named + ["other"]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    total: Counter = Counter()

    def row(name, kind, s):
        res = s["results"]
        other = sum(n for r, n in s["reasons"].items() if r not in named)
        kept = s["to_model"] - res.get("distributed", 0) - res.get("invalid", 0) \
            - res.get("error", 0)
        cells = [name, kind, s["loops"], s["to_model"], res.get("distributed", 0), kept] + [s["reasons"].get(r, 0) for r in named] + [other]
        return "| " + " | ".join(str(c) for c in cells) + " |"

    for name, s in sorted(per.items(), key=lambda kv: (kv[1]["kind"], kv[0])):
        rows.append(row(name, s["kind"], s))
        total["loops"] += s["loops"]
        total["to_model"] += s["to_model"]
        for k, v in s["results"].items():
            total["r:" + k] += v
        for k, v in s["reasons"].items():
            total["c:" + k] += v
    all_ = {"loops": total["loops"], "to_model": total["to_model"],
            "results": {k[2:]: v for k, v in total.items() if k.startswith("r:")},
            "reasons": {k[2:]: v for k, v in total.items() if k.startswith("c:")}}
    rows.append(row("**all**", "", all_))
    return "\n".join(rows)
