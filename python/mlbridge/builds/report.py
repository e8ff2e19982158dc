"""Results of many builds: the JSON file they are kept in, the comparison of
each build with its plain base, and the tables printed from them."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Tuple

from .configs import CONFIGS, by_name as config_by_name

__all__ = ["load", "save", "key", "compare", "table", "totals"]

Key = Tuple[str, str, int]


def key(rec: dict) -> Key:
    return rec["project"], rec["config"], int(rec["llvm"])


def load(path) -> List[dict]:
    """The records in ``path`` (none if it does not exist)."""
    try:
        return list(json.loads(Path(path).read_text())["results"])
    except FileNotFoundError:
        return []


def save(path, records: Iterable[dict]) -> None:
    """Writes ``records`` (sorted, one per project, configuration and LLVM:
    a later record replaces an earlier one) atomically."""
    by_key: Dict[Key, dict] = {}
    for rec in records:
        by_key[key(rec)] = rec
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_text(json.dumps({"results": [by_key[k] for k in sorted(by_key)]}, indent=1) + "\n")
    os.replace(tmp, path)


def _ratio(a, b) -> Optional[float]:
    return a / b if a and b else None


def compare(records: List[dict]) -> List[dict]:
    """Each record with its comparison to the plain build of its base
    configuration (same project and LLVM): ``cpu_ratio``, ``rss_ratio``,
    ``text_ratio`` (to the base), ``text_vs_best`` (to the best flags, for
    -Oz configurations), ``headers_same`` (None when there is no base or
    no header to compare)."""
    index = {key(r): r for r in records}
    rows = []
    for rec in records:
        project, name, llvm = key(rec)
        try:
            cfg = config_by_name(name)
        except KeyError:
            continue
        base = index.get((project, cfg.base, llvm))
        best = index.get((project, "best", llvm))
        ok = rec["ok"] and base is not None and base["ok"]
        row = dict(rec)
        row["cpu_ratio"] = _ratio(rec["cpu"], base["cpu"]) if ok else None
        # records from before the peak RSS was measured under GNU time
        # (it was the Python parent's) have no ratio
        rss_ok = ok and rec.get("rss_measure") == base.get("rss_measure") == "gnu-time"
        row["rss_ratio"] = _ratio(rec["max_rss_kib"], base["max_rss_kib"]) if rss_ok else None
        row["text_ratio"] = _ratio(rec["text_total"], base["text_total"]) if ok else None
        row["text_vs_best"] = (_ratio(rec["text_total"], best["text_total"])
                               if cfg.level == "-Oz" and rec["ok"] and best and best["ok"]
                               else None)
        row["headers_same"] = (rec["headers"] == base["headers"]
                               if base is not None and rec["headers"] and cfg.base != name
                               else None)
        rows.append(row)
    return rows


def _fmt(x, spec="{:.3f}") -> str:
    return "–" if x is None else spec.format(x)


def table(records: List[dict]) -> str:
    """A markdown table per project: one row per configuration and LLVM."""
    rows = compare(records)
    order = {c.name: i for i, c in enumerate(CONFIGS)}
    out = []
    for project in sorted({r["project"] for r in rows}):
        mine = sorted((r for r in rows if r["project"] == project),
                      key=lambda r: (r["llvm"], order.get(r["config"], 99)))
        out.append(f"### {project} {mine[0]['version']} ({mine[0]['build_system']})\n")
        out.append("| LLVM | configuration | build | tests | `.text` | × base | × best flags "
                   "| CPU × base | RSS × base | config header = base |")
        out.append("|---|---|---|---:|---:|---:|---:|---:|---:|---|")
        for r in mine:
            tests = f"{r['tests_passed']}/{r['tests_total']}" if r["ok"] else "–"
            same = {None: "–", True: "same", False: "**differs**"}[r["headers_same"]]
            out.append(f"| {r['llvm']} | {r['config']} | "
                       f"{'ok' if r['ok'] else 'FAILED (' + str(r['failed_step']) + ')'} | "
                       f"{tests} | {r['text_total']:,} | {_fmt(r['text_ratio'])} | "
                       f"{_fmt(r['text_vs_best'])} | {_fmt(r['cpu_ratio'], '{:.2f}')} | "
                       f"{_fmt(r['rss_ratio'], '{:.2f}')} | {same} |")
        out.append("")
    out.append(totals(records))
    return "\n".join(out)


def totals(records: List[dict]) -> str:
    """Per configuration and LLVM: total ``.text`` against its base, plain
    -Oz and the best flags (over the projects built with both), the
    geometric mean of CPU and the largest RSS against the base, tests
    passed."""
    rows = compare(records)
    index = {key(r): r for r in records}
    out = ["### All projects\n",
           "| LLVM | configuration | builds ok | tests passed | `.text` × base | × -Oz "
           "| × best flags | CPU × base (geo. mean) | RSS × base (max) | config headers differ |",
           "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    order = [c.name for c in CONFIGS]
    for llvm in sorted({r["llvm"] for r in rows}):
        for name in order:
            mine = [r for r in rows if r["config"] == name and r["llvm"] == llvm]
            if not mine:
                continue
            ok = [r for r in mine if r["ok"]]

            def total_vs(other):
                pairs = [(r["text_total"], index[(r["project"], other, llvm)]["text_total"])
                         for r in ok if index.get((r["project"], other, llvm), {}).get("ok")]
                return _ratio(sum(a for a, _ in pairs), sum(b for _, b in pairs))

            cpu = [r["cpu_ratio"] for r in ok if r["cpu_ratio"]]
            rss = [r["rss_ratio"] for r in ok if r["rss_ratio"]]
            geo = (math.prod(cpu) ** (1 / len(cpu))) if cpu else None
            passed = sum(r["tests_passed"] for r in ok)
            total = sum(r["tests_total"] for r in ok)
            differ = sum(1 for r in mine if r["headers_same"] is False)
            out.append(f"| {llvm} | {name} | {len(ok)}/{len(mine)} | {passed}/{total} | "
                       f"{_fmt(total_vs(config_by_name(name).base))} | {_fmt(total_vs('Oz'))} | {_fmt(total_vs('best'))} | "
                       f"{_fmt(geo, '{:.2f}')} | {_fmt(max(rss) if rss else None, '{:.2f}')} | "
                       f"{differ} |")
    return "\n".join(out) + "\n"
