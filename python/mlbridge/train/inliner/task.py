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

``{"ir": bytes, "key": str, "policy": dict | None, "flip": int | None,
   "record": bool, "timeout": seconds}``

``policy`` is :meth:`InlinePolicy.to_dict` (None: LLVM's default decision);
``flip`` inverts the policy's decision at that request index only (the
exploration move of the trainer), or at each index of a list; ``record`` returns the features of every
request. The result dict has ``text`` (bytes), ``requests``, ``deviations``
(decisions that differ from LLVM's default), ``seconds`` and, if recorded,
``X`` (feature matrix, columns ``MODEL_FEATURES``) and ``decisions``.
"""

import os

import numpy as np

from ...toolchain import compile, toolchain
from .policy import MODEL_FEATURES, InlinePolicy, feature_matrix

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
    rows, decisions = [], []
    state = {"index": 0, "deviations": 0}

    def decide(obs):
        i = state["index"]
        state["index"] = i + 1
        default = int(obs["inlining_default"][0])
        x = feature_matrix([obs])
        a = int(policy.decide(x)[0]) if policy is not None else default
        if i in flips:
            a = 1 - a
        state["deviations"] += a != default
        if record:
            rows.append(x[0])
            decisions.append(a)
        return a

    decide.needs_default = True
    res = compile([toolchain().clang, "-Oz", "-c", module, "-o", out],
                  advisors={"inline": decide}, include_default=True,
                  timeout=float(task.get("timeout", 600.0)))
    result = {"key": task["key"], "text": res.text, "requests": state["index"],
              "deviations": state["deviations"], "seconds": res.wall_seconds,
              "cpu_seconds": res.cpu_seconds}
    if record:
        result["X"] = np.array(rows, dtype=np.float64).reshape(-1, len(MODEL_FEATURES))
        result["decisions"] = np.array(decisions, dtype=np.int64)
    return result
