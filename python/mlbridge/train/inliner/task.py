"""One compilation of one module with a given inlining policy, measured the
way results are reported: the ``.text`` bytes of the object file that
``clang-19 -Oz -c`` writes.

The module is the translation unit's ``-Oz`` IR (``clang-19 -Oz -Xclang
-disable-llvm-passes -emit-llvm``, which keeps the ``minsize``/``optsize``
attributes), so ``clang-19 -Oz -c module.bc`` runs exactly the ``-Oz``
pipeline and back end that compiling the source does; with LLVM's default
decision at every call site the object is byte-identical to plain
``clang-19 -Oz`` (checked per module by the corpus tool).

LLVM's interactive inliner (``-enable-ml-inliner=release``) asks Python for
each decision; :func:`mlbridge.toolchain.compile` serves it. A task is a plain dict so
that it can travel to a Ray worker on another machine:

``{"ir": bytes, "key": str, "policy": dict | None, "flip": int | list | None,
   "record": bool, "timeout": seconds}``

``policy`` is :meth:`InlinePolicy.to_dict` (None: LLVM's default decision);
``flip`` inverts the decision at that request index (or at each index of a
list: the moves of the search oracle); ``embeddings`` (with no policy)
records the plugin's IR2Vec vectors too; ``record`` returns the features of
every request and LLVM's default decision there. The result dict has
``text`` (bytes), ``requests``, ``inlined`` (inline decisions),
``seconds`` and, if recorded, ``X`` (feature matrix, columns
``MODEL_FEATURES``), ``decisions`` and ``defaults``.

A policy with embeddings cannot be served by stock ``clang-19`` (its
interactive mode sends no IR2Vec vectors): such a task loads
``MLBridgeInlineAdvisor.so`` into ``clang-19`` and serves the plugin over
its pipe (``-mlbridge-inline-channel``, ``-mlbridge-inline-embeddings``);
the plugin's features equal LLVM's (tests/e2e/test_plugin_inliner.py).
"""

import os

import numpy as np

from ...llvm.host import advisor_host
from ...toolchain import compile, toolchain
from .policy import (EMBEDDING_DIM, MODEL_FEATURES, InlinePolicy, embedding_matrix,
                     feature_matrix)

__all__ = ["execute", "make_task", "PROBLEM"]

#: The registry name that routes these tasks to :func:`execute` on a worker.
PROBLEM = "inliner"


def make_task(ir, *, policy=None, flip=None, record=False, timeout=600.0, key=None):
    """A task for :func:`execute`; ``ir`` is the module's bitcode (bytes)
    or the path of a file to read it from."""
    if isinstance(ir, (bytes, bytearray)):
        data = bytes(ir)
    else:
        with open(ir, "rb") as f:
            data = f.read()
        key = key or os.fspath(ir)
    return {"problem": PROBLEM, "ir": data, "key": key, "policy": policy, "flip": flip,
            "record": record, "timeout": timeout}


def execute(task, workdir):
    """Runs one task (see the module docstring) in ``workdir`` (a
    :class:`mlbridge.train.cluster.Workdir`); raises
    :class:`mlbridge.toolchain.CompileError` if the compiler or the host
    failed."""
    module = workdir.module(task["ir"])
    out = os.path.join(workdir.path, f"out-{os.getpid()}.o")
    policy = InlinePolicy.from_dict(task["policy"]) if task.get("policy") else None
    flip = task.get("flip")
    flips = set(flip) if isinstance(flip, (list, tuple, set)) else {flip}
    record = bool(task.get("record"))
    # LLVM's decision is asked for only where it is used (it costs one more
    # inline-cost analysis per call site).
    want_default = policy is None or record or policy.needs_default
    dim = (policy.embedding_dim if policy is not None
           else EMBEDDING_DIM if task.get("embeddings") else 0)
    rows, embeddings, decisions, defaults = [], [], [], []
    state = {"index": 0, "inlined": 0}

    def decide(obs):
        i = state["index"]
        state["index"] = i + 1
        x = feature_matrix([obs])
        e = embedding_matrix([obs], dim) if dim else None
        default = int(obs["inlining_default"][0]) if want_default else -1
        a = (int(policy.decide(x, e, [default] if policy.needs_default else None)[0])
             if policy is not None else default)
        if i in flips:
            a = 1 - a
        state["inlined"] += a
        if record:
            rows.append(x[0])
            decisions.append(a)
            defaults.append(default)
            if dim:
                embeddings.append(e[0])
        return a

    decide.needs_default = want_default
    timeout = float(task.get("timeout", 600.0))
    if dim:
        res = _compile_with_plugin(module, out, decide, want_default, timeout)
    else:
        res = compile([toolchain().clang, "-Oz", "-c", module, "-o", out],
                      host=advisor_host({"inline": decide}, include_default=want_default),
                      timeout=timeout)
    result = {"key": task["key"], "text": res.text, "requests": state["index"],
              "inlined": state["inlined"], "seconds": res.wall_seconds,
              "cpu_seconds": res.cpu_seconds}
    if record:
        result["X"] = np.array(rows, dtype=np.float64).reshape(-1, len(MODEL_FEATURES))
        result["decisions"] = np.array(decisions, dtype=np.int64)
        result["defaults"] = np.array(defaults, dtype=np.int64)
        if dim:
            result["E"] = np.array(embeddings, dtype=np.float32).reshape(-1, 2, dim)
    return result


def _compile_with_plugin(module, out, decide, include_default, timeout):
    """``clang-19 -Oz -c`` with ``MLBridgeInlineAdvisor.so`` asking
    ``decide`` over its pipe, the IR2Vec vectors included; the measured
    :class:`mlbridge.toolchain.Compiled`-like result."""
    import time
    from types import SimpleNamespace

    from ...llvm.plugins import find_plugins
    from ...toolchain.measure import elf_text_size
    from ...toolchain import CompileError, serve_compiler
    plugin = find_plugins().inline_advisor

    def command(channel):
        opts = [f"-mlbridge-inline-channel={channel}", "-mlbridge-inline-embeddings"]
        if include_default:
            opts.append("-mlbridge-inline-include-default")
        cmd = [toolchain().clang, "-Oz", "-c", module, "-o", out, f"-fpass-plugin={plugin}",
               "-Xclang", "-load", "-Xclang", plugin]
        for o in opts:
            cmd += ["-mllvm", o]
        return cmd

    t0 = time.monotonic()
    try:
        run = serve_compiler(command, decide, timeout=timeout)
    except (OSError, TimeoutError) as e:
        raise CompileError(f"clang-19 with {plugin}: {e}") from None
    if run.returncode != 0 or "warning: mlbridge-inline" in run.stderr:
        raise CompileError(f"clang-19 with {plugin}: exit {run.returncode}: "
                           f"{run.stderr.strip()[-400:]}")
    return SimpleNamespace(text=elf_text_size(out), wall_seconds=time.monotonic() - t0,
                           cpu_seconds=run.cpu_seconds)
