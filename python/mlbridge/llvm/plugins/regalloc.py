"""Register allocation with ``MLBridgeRegAlloc.so`` and its score.

The plugin (docs/register-allocation.md) adds ``-regalloc=mlbridge`` to
``llc-19``/``clang-19`` and the ``mlbridge-ra-score`` pass. This module
compiles a ``.ll`` or ``.c`` with any allocator -- ours (built-in model or
heuristic, the random legal policy, or a Python policy answering over pipes)
or LLVM's ``greedy``, ``basic``, ``fast`` -- and returns each function's
score, all measured by the same pass on the allocated MIR::

    from mlbridge.llvm.plugins import regalloc

    greedy = regalloc.allocate("prog.ll", "greedy")
    ours = regalloc.allocate("prog.ll", "mlbridge", policy="heuristic")
    ours.total / greedy.total
    regalloc.allocate("prog.ll", "mlbridge", policy=regalloc.first_legal)  # over pipes

A Python policy is ``observation -> int``: the observation holds the
features of the protocol (:data:`FEATURES`; ``obs["agent"]`` says which
agent is asked) and the answer is an index that must be legal under that
agent's mask (:func:`legal_mask`); an illegal one is replaced by the
built-in heuristic's choice and counted in the log (``illegal``).
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Union

import numpy as np

from ...toolchain import ModelServer, compile
from ..host import advisor_host
from ._plugins import PluginInfo, PluginNotFound, find_plugins, tool_env
from ._protocol import load as load_protocol

__all__ = ["ALLOCATORS", "AGENTS", "ACTIONS", "MAX_NODES", "MAX_REGS", "NODE_FEATURES",
           "REGISTER_FEATURES", "FEATURES", "FunctionScore", "Allocation", "allocate",
           "llc_command", "legal_mask", "first_legal", "optimized_ir", "compare_corpus",
           "check_csmith", "settings_env"]

#: The allocators compared: ours and LLVM's three.
ALLOCATORS = ("mlbridge", "greedy", "basic", "fast")
#: The protocol, from RegAllocProtocol.def (the file the plugin includes;
#: -mlbridge-ra-describe prints the same).
PROTOCOL = load_protocol("regalloc", "RegAllocProtocol.def")
#: The agents, in the order of the ``agent`` feature.
AGENTS = tuple(PROTOCOL.lists["Agent"])
#: What the ``action`` agent chooses among.
ACTIONS = tuple(PROTOCOL.lists["Action"])
#: The window of live ranges and the candidate registers per decision.
MAX_NODES = PROTOCOL.constants["MaxNodes"]
MAX_REGS = PROTOCOL.constants["MaxRegs"]
#: The columns of ``node_features`` and ``register_features``.
NODE_FEATURES = tuple(PROTOCOL.lists["NodeFeature"])
REGISTER_FEATURES = tuple(PROTOCOL.lists["RegFeature"])
#: Every feature of a decision: name -> shape (int64 for ``agent``, float32
#: otherwise).
FEATURES = {name: shape for name, (_, shape) in PROTOCOL.feature_map().items()}
_MASKS = ("node_mask", "action_mask", "register_mask")


def legal_mask(obs) -> np.ndarray:
    """The legal choices (bool vector) of the agent ``obs`` asks."""
    agent = int(np.asarray(obs["agent"]).reshape(-1)[0])
    return np.asarray(obs[_MASKS[agent]], dtype=np.float32).reshape(-1) > 0.5


def first_legal(obs) -> int:
    """A policy: the first legal choice of every agent (the window's highest
    priority range; assign before split before spill; the first legal
    candidate register)."""
    return int(np.flatnonzero(legal_mask(obs))[0])


@dataclass
class FunctionScore:
    """MLGO's RegAllocScore of one function and its frequency-weighted
    counts (docs/register-allocation.md, "Score")."""

    function: str
    score: float
    copies: float
    loads: float
    stores: float
    load_stores: float
    cheap_remats: float
    expensive_remats: float


@dataclass
class Allocation:
    """One program allocated by one allocator: per-function scores and, for
    ours, the allocator's log lines (decisions, spills, splits, ...)."""

    allocator: str
    scores: Dict[str, FunctionScore]
    log: List[dict] = field(default_factory=list)
    cpu_seconds: float = 0.0

    @property
    def total(self) -> float:
        return float(sum(s.score for s in self.scores.values()))


def optimized_ir(source, output, *, flags: Sequence[str] = (), clang: Optional[str] = None,
                 timeout: float = 120.0) -> Path:
    """A C file -> its ``clang -O2`` IR (what llc then allocates)."""
    from ...toolchain import toolchain
    clang = clang or toolchain().clang
    compile([clang, "-O2", "-S", "-emit-llvm", *flags, str(source), "-o", str(output)],
            timeout=timeout, measure_text=False)
    return Path(output)


def _plugin(plugins: Optional[PluginInfo]) -> PluginInfo:
    plugins = plugins or find_plugins(llvm=19)
    if plugins.regalloc is None:
        raise PluginNotFound("MLBridgeRegAlloc.so is not in the build (LLVM 19 plugins)")
    return plugins


def llc_command(ir, output, allocator: str = "mlbridge", *, plugins: Optional[PluginInfo] = None,
                verify: bool = True, extra: Sequence[str] = ()) -> List[str]:
    """The ``llc-19 -O2`` command allocating ``ir`` with ``allocator``
    (:data:`ALLOCATORS`), our plugin loaded; ``extra`` e.g.
    ``["-filetype=obj"]`` or ``["-stop-after=virtregrewriter"]``."""
    if allocator not in ALLOCATORS:
        raise ValueError(f"allocator must be one of {ALLOCATORS}, not {allocator!r}")
    plugins = _plugin(plugins)
    cmd = [plugins.tool("llc"), "-O2", "-relocation-model=pic", f"-load={plugins.regalloc}",
           f"-regalloc={allocator}"]
    if verify:
        cmd.append("-verify-machineinstrs")
    return cmd + list(extra) + [str(ir), "-o", str(output)]


def _parsable_mir(mir: Path) -> None:
    """LLVM 19's MIR parser rejects a vector ``zeroinitializer`` its printer
    writes into the constant pool; the score never reads the pool's values,
    so such values become ``undef`` of the same type before scoring."""
    text = mir.read_text()
    fixed = re.sub(r"^(\s+value:\s+'.*) zeroinitializer'$", r"\1 undef'", text, flags=re.M)
    if fixed != text:
        mir.write_text(fixed)


def settings_env(plugins: PluginInfo, **settings) -> Dict[str, str]:
    """The environment of a tool loading ``plugins``' allocator with exactly
    ``settings`` (``MLBRIDGE_RA_*`` names): this process's own
    ``MLBRIDGE_RA_*`` variables are dropped, so none leaks into the tool."""
    env = {k: v for k, v in tool_env(plugins, dict(os.environ)).items()
           if not k.startswith("MLBRIDGE_RA_")}
    env.update({k: str(v) for k, v in settings.items()})
    return env


def _policy_env(policy, seed: Optional[int]) -> Dict[str, str]:
    if policy is None:
        return {}
    if policy in ("heuristic", "random", "model"):
        env = {"MLBRIDGE_RA_POLICY": policy}
        if seed is not None:
            env["MLBRIDGE_RA_SEED"] = str(seed)
        return env
    if isinstance(policy, (str, os.PathLike)):  # an ONNX model file
        return {"MLBRIDGE_RA_POLICY": "model", "MLBRIDGE_RA_RUNNER": "onnx",
                "MLBRIDGE_RA_MODEL": str(policy)}
    raise ValueError(f"unknown policy {policy!r}")


def allocate(program, allocator: str = "mlbridge", *,
             policy: Union[None, str, os.PathLike, Callable] = None, seed: Optional[int] = None,
             plugins: Optional[PluginInfo] = None, workdir=None, verify: bool = True,
             object_file=None, timeout: float = 600.0,
             advisors: Optional[Dict[str, Callable]] = None) -> Allocation:
    """Allocates ``program`` (``.ll``, or ``.c`` compiled with ``clang -O2``)
    with ``allocator`` and scores every function with ``mlbridge-ra-score``.

    ``policy`` (ours only): ``None`` (the plugin's default: its built-in
    model, else the heuristic), ``"heuristic"``, ``"random"`` (with
    ``seed``), an ONNX file (in-process), or a Python callable answering over
    pipes. ``object_file``: also write the object (same allocation, for
    running the program). ``advisors``: LLVM's interactive advisors answered
    from Python while allocating (``{"evict": policy}`` for ``greedy``; see
    :func:`mlbridge.toolchain.compile`). Raises :class:`mlbridge.toolchain.CompileError`
    when llc fails (e.g. a -verify-machineinstrs error)."""
    plugins = _plugin(plugins)
    host = advisor_host(advisors) if advisors else None
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        tmp = Path(tmp)
        ir = Path(program)
        if ir.suffix == ".c":
            ir = optimized_ir(ir, tmp / "prog.ll")
        log = tmp / "ra.jsonl"
        scores = tmp / "scores.jsonl"
        env = tool_env(plugins)
        env["MLBRIDGE_RA_LOG"] = str(log)
        server = None
        if callable(policy):
            server = ModelServer(policy, timeout=timeout)
            env.update(MLBRIDGE_RA_POLICY="model", MLBRIDGE_RA_RUNNER="pipe",
                       MLBRIDGE_RA_CHANNEL=server.endpoint,
                       MLBRIDGE_RA_TIMEOUT_MS=str(int(timeout * 1000)))
        else:
            env.update(_policy_env(policy, seed))
        cpu = 0.0
        try:
            mir = tmp / "prog.mir"
            # The MIR right after allocation and rewriting: what every
            # allocator is scored on.
            cpu += compile(llc_command(ir, mir, allocator, plugins=plugins, verify=verify,
                                       extra=["-stop-after=virtregrewriter"]),
                           env=env, timeout=timeout, measure_text=False,
                           host=host).cpu_seconds
            if object_file is not None:
                compile(llc_command(ir, object_file, allocator, plugins=plugins, verify=verify,
                                    extra=["-filetype=obj"]),
                        env=dict(env, MLBRIDGE_RA_LOG=""), timeout=timeout, host=host)
        finally:
            if server is not None:
                server.close()
        _parsable_mir(mir)
        compile([plugins.tool("llc"), f"-load={plugins.regalloc}", "-run-pass=mlbridge-ra-score",
                 f"-mlbridge-ra-score-file={scores}", f"-mlbridge-ra-score-label={allocator}",
                 str(mir), "-o", os.devnull], env=tool_env(plugins), timeout=timeout,
                measure_text=False)
        result = {}
        # a module without functions (only data) gets no score file
        for line in (scores.read_text().splitlines() if scores.exists() else ()):
            d = json.loads(line)
            result[d["function"]] = FunctionScore(
                d["function"], d["score"], d["copies"], d["loads"], d["stores"],
                d["load_stores"], d["cheap_remats"], d["expensive_remats"])
        lines = [json.loads(x) for x in log.read_text().splitlines()] if log.exists() else []
        return Allocation(allocator, result, lines, cpu)


def compare_corpus(split: str = "heldout", *, units: int = 12, policy=None,
                   allocators: Sequence[str] = ALLOCATORS, workdir=None) -> Dict[str, Dict[str, float]]:
    """Total score per library and allocator over the first ``units`` units
    of each library of the corpus ``split`` (each unit: ``clang -O2`` with
    its flags, then :func:`allocate`). A unit that fails to compile with
    any allocator is left out of every total and reported under
    ``"_failed"``."""
    from ...corpus.manifest import Corpus
    totals: Dict[str, Dict[str, float]] = {}
    failed: Dict[str, str] = {}
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        by_lib: Dict[str, list] = {}
        for m in Corpus.load().modules(split):
            by_lib.setdefault(m.library, []).append(m)
        for lib, mods in sorted(by_lib.items()):
            for m in mods[:units]:
                ir = Path(tmp) / (m.name.replace("/", "_") + ".ll")
                try:
                    optimized_ir(m.source, ir, flags=m.flags, timeout=600)
                    res = {a: allocate(ir, a, policy=policy if a == "mlbridge" else None).total
                           for a in allocators}
                except Exception as exc:  # noqa: BLE001 - reported, not hidden
                    failed[m.name] = str(exc)[:300]
                    continue
                row = totals.setdefault(lib, {a: 0.0 for a in allocators})
                for a, v in res.items():
                    row[a] += v
                row["units"] = row.get("units", 0) + 1
    if failed:
        totals["_failed"] = failed  # type: ignore[assignment]
    return totals


def check_csmith(seeds: Sequence[int], policies: Sequence = ("heuristic", ("random", 1)), *,
                 max_funcs: int = 8, workdir=None, run_timeout: float = 30.0) -> dict:
    """Correctness sweep: each csmith program (``opt -O2`` of its IR) built
    with greedy and with ours under each policy (``"heuristic"``, or
    ``("random", seed)``), ``-verify-machineinstrs`` on; the programs must
    print the same checksum. Returns counts and the failures (a program
    whose greedy build does not finish in ``run_timeout`` is skipped and
    listed under ``"skipped"``)."""
    import subprocess
    from ...toolchain import run_tool, toolchain
    from .corpus import csmith_ir
    plugins = _plugin(None)
    clang = toolchain().clang
    report = {"programs": 0, "builds": 0, "equal": 0, "skipped": [], "failures": []}
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        tmp = Path(tmp)

        def build(ir, tag, allocator, env):
            obj = tmp / f"{ir.stem}-{tag}.o"
            compile(llc_command(ir, obj, allocator, plugins=plugins, extra=["-filetype=obj"]),
                    env=dict(tool_env(plugins), **env), timeout=600)
            exe = obj.with_suffix("")
            compile([clang, str(obj), "-o", str(exe)], measure_text=False)
            return subprocess.run([str(exe)], capture_output=True, timeout=run_timeout).stdout

        for seed in seeds:
            raw = csmith_ir(seed, tmp, max_funcs=max_funcs)
            ir = tmp / f"opt{seed}.ll"
            run_tool([plugins.tool("opt"), "-O2", str(raw), "-S", "-o", str(ir)])
            try:
                want = build(ir, "greedy", "greedy", {})
            except subprocess.TimeoutExpired:
                report["skipped"].append(seed)
                continue
            report["programs"] += 1
            for pol in policies:
                name, pseed = (pol, None) if isinstance(pol, str) else pol
                tag = f"{name}{pseed or ''}"
                report["builds"] += 1
                try:
                    got = build(ir, tag, "mlbridge", _policy_env(name, pseed))
                except Exception as exc:  # noqa: BLE001 - a failure to report
                    report["failures"].append({"seed": seed, "policy": tag, "error": str(exc)[:300]})
                    continue
                if got == want:
                    report["equal"] += 1
                else:
                    report["failures"].append({"seed": seed, "policy": tag, "error": "output differs"})
    return report


if __name__ == "__main__":
    # python -m mlbridge.llvm.plugins.regalloc compare [split] [units]
    # python -m mlbridge.llvm.plugins.regalloc csmith <first seed> <count>
    import sys
    args = sys.argv[1:] or ["compare"]
    if args[0] == "csmith":
        first, count = int(args[1]), int(args[2])
        out = check_csmith(range(first, first + count),
                           ("heuristic", ("random", 1), ("random", 2), ("random", 3)))
    else:
        out = compare_corpus(args[1] if len(args) > 1 else "heldout",
                             units=int(args[2]) if len(args) > 2 else 12, policy="heuristic")
    print(json.dumps(out, indent=1))
