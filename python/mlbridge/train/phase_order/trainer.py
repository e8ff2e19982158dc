"""Phase ordering for code size, trained on real ``.text``.

The episode (``MLBridgePhaseOrder.so`` in ``clang-19 -Oz``) starts where
clang's ``-Oz`` pipeline ends, with the best stock size flags already
applied (``start``, by default those chosen on validation,
:mod:`mlbridge.train.baselines`), so STOP at once is exactly ``clang -Oz``
with those flags; each action runs one of 21 (pass sequences of ``-Oz``,
the whole ``-Oz`` module pipeline again, ``mergefunc``, ``iroutliner``, the
machine outliner for the module on or off, ``nooutline`` on small
functions) and the reward is the change of the object's ``.text``.
docs/training.md describes the method.

1. **Oracle episodes** (Ray workers, :func:`.task.oracle_task`): on each
   training module the plugin reports, at every state, the ``.text`` after
   each action (``lookahead``); the oracle takes the action that shrinks
   ``.text`` most and stops when none does.
2. **Regression networks** learn, from the observation alone (27 counts as
   ``log(1 + x)``; with and without IR2Vec's module vector), the ``.text``
   change of every action in percent, on every state the oracle visited
   (all 21 actions are labelled there).
3. **The deployed policy** is that network plus one constant score for
   STOP, ``threshold``: it acts only where it predicts a gain above the
   threshold. The network (counts only, or counts and embedding) and the
   threshold are chosen on the validation libraries by compiling them with
   the plugin and the candidate model (infinity, i.e. STOP at once: the
   start flags' object, is always a candidate; a threshold with a failed compile is rejected and
   ``log.jsonl`` says why).

    python -m mlbridge.train phase-order train --out runs/phase-order
"""

import json
import logging
import random
import time
from pathlib import Path

import numpy as np

from ...llvm.plugins.phase_order import NUM_OBSERVATIONS, OBSERVATION_SIZE
from ..cluster import TaskFailed, WorkerPool
from ..results import RunResults, TrainingError, write_atomically
from ..selection import Rejected, best, sweep
from .policy import NUM_PASS_ACTIONS, PhasePolicy
from .task import compile_task, oracle_task

__all__ = ["collect", "labels", "select_threshold", "compile_all", "train", "CLIP_PCT",
           "shipped_start", "shipped_max_steps", "episode_start", "SHIPPED_POLICY"]

#: The shipped policy (Python form); its ``start`` says the flags its
#: episodes start from.
SHIPPED_POLICY = Path(__file__).resolve().parents[4] / "models" / "plugins" / \
    "phase_order_policy.json"


def _shipped(key, default):
    try:
        return json.loads(SHIPPED_POLICY.read_text()).get(key, default)
    except FileNotFoundError:
        return default


def shipped_start():
    """The stock size flags the shipped policy's episodes start from (the
    plugin applies them with its built-in model; an ONNX file of the policy
    must be given them, MLBRIDGE_PO_START, to run as trained)."""
    return tuple(_shipped("start", ()))


def episode_start(config):
    """The flags a phase-ordering episode of evaluation configuration
    ``config`` (:class:`mlbridge.train.evaluate.Config`) starts from: its
    ``phase_order_start``, else the built-in model's (:func:`shipped_start`;
    an ONNX model brings none)."""
    if config.phase_order_start is not None:
        return tuple(config.phase_order_start)
    if config.phase_order_model:
        return ()
    return shipped_start()


def shipped_max_steps():
    """The step budget the shipped policy was trained and selected with
    (applied like :func:`shipped_start`)."""
    return int(_shipped("max_steps", 3))

_log = logging.getLogger("mlbridge.train")

#: A predicted change is clipped to this many percent of .text (a few
#: actions double a small module; their exact size does not matter).
CLIP_PCT = 5.0


def _read_ir(m):
    with open(m.ir(), "rb") as f:
        return f.read()


def collect(pool, modules, *, plugin, max_steps=3, start=(), progress=None,
            max_minutes=None, chunk=16, checkpoint=None):
    """Oracle episodes on ``modules`` (objects with ``ir()`` and ``name``),
    one task each, starting from the flags ``start``; returns (episodes,
    failed tasks). Failed tasks are logged and left out. With
    ``max_minutes`` the modules go in a fixed random order, ``chunk`` at a
    time, and no chunk starts after that time (a time box);
    ``checkpoint(episodes)`` is called after each chunk."""
    order = list(modules)
    if max_minutes is not None:
        random.Random(0).shuffle(order)
    t0 = time.monotonic()
    out, failed = [], []
    for i in range(0, len(order), chunk if max_minutes is not None else len(order) or 1):
        if max_minutes is not None and time.monotonic() - t0 > 60.0 * max_minutes:
            _log.info("oracle time box: %d of %d modules done", i, len(order))
            break
        part = order[i:i + chunk] if max_minutes is not None else order
        tasks = [oracle_task(_read_ir(m), plugin=plugin, max_steps=max_steps, start=start,
                             key=m.name) for m in part]
        for m, r in zip(part, pool.map(tasks, progress=progress)):
            if isinstance(r, dict):
                r["module"], r["library"] = m.name, m.library
                out.append(r)
            else:
                _log.warning("oracle episode failed: %s", r)
                failed.append(r)
        if checkpoint is not None and out:
            checkpoint(out)
    return out, failed


def labels(episodes):
    """(X, Y): every visited state's observation and the change of .text of
    each action from it, in percent (negative = smaller), clipped."""
    X, Y = [], []
    for e in episodes:
        for s, la, size in zip(e["states"], e["lookahead"], e["sizes"]):
            if size <= 0:
                continue
            change = np.where(la >= 0, 100.0 * (la - size) / size, CLIP_PCT)
            X.append(s)
            Y.append(np.clip(change, -CLIP_PCT, CLIP_PCT))
    return (np.asarray(X, dtype=np.float32).reshape(-1, OBSERVATION_SIZE),
            np.asarray(Y, dtype=np.float32).reshape(-1, NUM_PASS_ACTIONS))


def compile_all(pool, modules, *, plugin, model=None, max_steps=3, start=(), progress=None):
    """``{module name: .text}`` of compiling each module's bitcode with
    ``clang-19 -Oz`` and the plugin's policy (``model`` ONNX bytes; None:
    plain -Oz) starting from the flags ``start``. Raises :class:`Rejected` naming the failed compiles: a
    policy that breaks a compile is not a candidate."""
    tasks = [compile_task(_read_ir(m), plugin=plugin, model=model, max_steps=max_steps,
                          start=start, key=m.name) for m in modules]
    results = pool.map(tasks, progress=progress)
    failed = [f"{m.name}: {str(r.error).strip()[-300:]}" for m, r in zip(modules, results)
              if isinstance(r, TaskFailed)]
    if failed:
        raise Rejected(f"{len(failed)} of {len(modules)} compiles failed: "
                       + "; ".join(failed[:3]))
    return {m.name: r["text"] for m, r in zip(modules, results)}


def _stop_model():
    """A policy that chooses STOP at once (the start flags' object)."""
    return PhasePolicy(np.zeros((1, NUM_OBSERVATIONS)), np.zeros(1),
                       np.zeros((NUM_PASS_ACTIONS, 1)), np.zeros(NUM_PASS_ACTIONS)).to_onnx()


def oz_total(pool, modules, *, plugin, start=(), progress=None):
    """The total .text of plain -Oz on ``modules`` (with the flags ``start``:
    of the plugin stopping at once, which is -Oz with those flags);
    TrainingError if a compile fails."""
    try:
        return sum(compile_all(pool, modules, plugin=plugin,
                               model=_stop_model() if start else None, start=start,
                               progress=progress).values())
    except Rejected as e:
        what = f"-Oz from the flags {', '.join(start)}" if start else "plain -Oz"
        raise TrainingError(f"{what} on the validation modules: {e}") from None


def select_threshold(pool, modules, policy, *, plugin, candidates, max_steps=3, start=(),
                     progress=None, log=None, base_total=None):
    """Compiles ``modules`` (validation) with the policy at each threshold
    and returns (best threshold, rows). Infinity (plain -Oz, measured unless
    ``base_total`` gives it) is always a candidate (a failure there raises
    TrainingError); a threshold must beat it to be chosen; a threshold with
    a failed compile is rejected."""
    if base_total is None:
        base_total = oz_total(pool, modules, plugin=plugin, start=start, progress=progress)
    rows = [{"threshold": "inf", "text": base_total, "ratio": 1.0}]

    def measured(c):
        row = ({"threshold": c.label, "rejected": c.rejected} if c.rejected is not None else
               {"threshold": c.label, "text": c.total, "ratio": c.total / base_total})
        rows.append(row)
        if log:
            log(row)

    results = sweep(((thr, policy.with_threshold(thr)) for thr in candidates),
                    lambda p: sum(compile_all(pool, modules, plugin=plugin, model=p.to_onnx(),
                                              max_steps=max_steps, start=start,
                                              progress=progress).values()),
                    on_result=measured)
    winner = best(results)
    if winner is None or winner.total >= base_total:
        return float("inf"), rows
    return winner.label, rows


def _write_npz(path, episodes):
    def write(tmp):
        with open(tmp, "wb") as f:
            np.savez_compressed(
                f, **{f"{i}_{k}": np.asarray(e[k]) for i, e in enumerate(episodes)
                      for k in ("states", "lookahead", "sizes", "actions")},
                names=np.asarray([e["module"] for e in episodes]),
                libraries=np.asarray([e["library"] for e in episodes]))
    write_atomically(path, write)


def _read_npz(path):
    d = np.load(path)
    eps = []
    for i, (name, lib) in enumerate(zip(d["names"], d["libraries"])):
        eps.append({k: d[f"{i}_{k}"] for k in ("states", "lookahead", "sizes", "actions")}
                   | {"module": str(name), "library": str(lib)})
    return eps


def train(train_modules, validation_modules, *, plugin, out_dir, workers=2, address=None,
          max_steps=3, data_from=None, thresholds=(0.05, 0.1, 0.2, 0.4, 0.8), hidden=32,
          seed=0, variants=("counts", "counts+ir2vec"), start=(), oracle_minutes=None,
          progress_bars=True, warm_start=None, es=None):
    """The whole run (see the module docstring); writes into ``out_dir``:
    ``oracle.npz`` (the episodes), ``policy.json``, ``policy.onnx``,
    ``log.jsonl``, ``summary.json``, and returns the summary dict.
    ``variants``: the networks fitted and compared on validation
    ("counts": the 27 counts; "counts+ir2vec": and IR2Vec's module vector);
    ``start``: the stock size flags every episode starts from (recorded in
    ``policy.json``; the plugin must be given them to run the policy);
    ``oracle_minutes``: the oracle episodes' time box (:func:`collect`).
    ``warm_start`` (a :class:`PhasePolicy`): instead of fitting, fine-tune
    it with evolution strategies (:mod:`.finetune`, knobs ``es``, an
    :class:`~.finetune.ESConfig`) and select among its iterates on
    validation; the oracle episodes then only calibrate ES and spare the
    compiles of candidates that stop at once. Raises TrainingError (writing
    nothing) when no oracle episode succeeds."""
    results = RunResults(out_dir)

    def log(rec):
        _log.info("%s", results.log(rec))

    def bar(n, desc):
        if not progress_bars:
            return None
        from tqdm import tqdm
        return tqdm(total=n, desc=desc, leave=False)
    t0 = time.monotonic()
    validation = {}
    with WorkerPool(workers, address=address) as pool, results:
        if data_from:
            episodes = _read_npz(data_from)
        else:
            b = bar(len(train_modules), "oracle episodes")
            episodes, failed = collect(
                pool, train_modules, plugin=plugin, max_steps=max_steps, start=start,
                progress=b.update if b else None, max_minutes=oracle_minutes,
                checkpoint=lambda eps: _write_npz(results.path("oracle.npz"), eps))
            if b:
                b.close()
            if not episodes:
                named = "; ".join(f"{f.key}: {str(f.error).strip()[-300:]}" for f in failed[:3])
                raise TrainingError(f"no oracle episode succeeded ({len(failed)} of "
                                    f"{len(train_modules)} failed): {named}")
        _write_npz(results.path("oracle.npz"), episodes)
        base = sum(int(e["sizes"][0]) for e in episodes)
        final = sum(int(e["final_text"]) for e in episodes if "final_text" in e)
        log({"stage": "oracle", "episodes": len(episodes), "start_text": base,
             "oracle_text": final if final else None,
             "seconds": round(time.monotonic() - t0, 1)})
        X, Y = labels(episodes)
        b = bar(len(validation_modules) * (len(variants) * len(thresholds) + 1), "validation")
        plain_total = oz_total(pool, validation_modules, plugin=plugin,
                               progress=b.update if b else None)
        base_total = plain_total if not start else oz_total(
            pool, validation_modules, plugin=plugin, start=start,
            progress=b.update if b else None)
        log({"stage": "validation-baselines", "oz_text": plain_total,
             "start": list(start), "start_text": base_total})
        if warm_start is not None:
            if b:
                b.close()
            policy, summary = _finetune(pool, results, warm_start, train_modules,
                                        validation_modules, episodes, plugin=plugin,
                                        max_steps=max_steps, start=start, es=es, log=log)
            _write_policy(results, policy, max_steps, start)
            summary.update(stage="done", start=list(start), validation_oz_text=plain_total,
                           validation_start_text=base_total,
                           train_modules=len(train_modules),
                           validation_modules=len(validation_modules),
                           seconds=round(time.monotonic() - t0, 1))
            log(summary)
            return results.summary(summary)
        chosen = None   # (validation .text, variant, threshold, policy)
        for variant in variants:
            fitted = PhasePolicy.fit(X, Y, hidden=hidden, seed=seed,
                                     embedding=variant == "counts+ir2vec")
            pred = -fitted.gains(X)
            log({"stage": "fit", "variant": variant, "states": int(len(X)),
                 "mse_pct2": float(np.mean((pred - Y) ** 2)),
                 "mse_zero_pct2": float(np.mean(Y ** 2))})
            thr, rows = select_threshold(
                pool, validation_modules, fitted, plugin=plugin, candidates=thresholds,
                max_steps=max_steps, start=start, progress=b.update if b else None,
                base_total=base_total,
                log=lambda r, v=variant: log(dict(stage="validation", variant=v, **r)))
            measured = {r["threshold"]: r["text"] for r in rows if "text" in r}
            text = measured[thr if np.isfinite(thr) else "inf"]
            validation[variant] = rows
            # Ties go to the variant listed first (counts only: no vocabulary).
            if chosen is None or text < chosen[0]:
                chosen = (text, variant, thr, fitted)
        if b:
            b.close()
        _, variant, thr, policy = chosen
        policy = policy.with_threshold(thr)
        _write_policy(results, policy, max_steps, start)
        summary = {"stage": "done", "variant": variant, "threshold": thr,
                   "start": list(start), "validation_oz_text": plain_total,
                   "validation": validation,
                   "train_modules": len(train_modules),
                   "validation_modules": len(validation_modules),
                   "seconds": round(time.monotonic() - t0, 1)}
        log(summary)
    return results.summary(summary)


def _write_policy(results, policy, max_steps, start, name="policy"):
    with open(results.path(f"{name}.json"), "w") as f:
        json.dump(dict(policy.to_dict(), max_steps=max_steps, start=list(start)), f)
    if name == "policy":
        policy.to_onnx(results.path("policy.onnx"))


def _finetune(pool, results, warm_start, train_modules, validation_modules, episodes, *,
              plugin, max_steps, start, es, log):
    """The ES stage of :func:`train`: (selected policy, summary fields)."""
    from .finetune import ESConfig, finetune
    cfg = es or ESConfig()

    def validate(p):
        return sum(compile_all(pool, validation_modules, plugin=plugin, model=p.to_onnx(),
                               max_steps=max_steps, start=start).values())

    candidates, winner = finetune(
        pool, warm_start, train_modules, episodes, validate, plugin=plugin,
        max_steps=max_steps, start=start, stop_model=_stop_model(), config=cfg, log=log,
        save_candidate=lambda label, p: _write_policy(results, p, max_steps, start,
                                                      name=f"candidate-it{label}"))
    if winner is None:
        raise TrainingError("every ES validation candidate was rejected: " + "; ".join(
            f"iteration {c.label}: {c.rejected}" for c in candidates))
    return winner.policy, {
        "es": cfg.as_dict(), "selected_iteration": winner.label,
        "validation_text": int(winner.total),
        "validation_candidates": {str(c.label): (None if c.total is None else int(c.total))
                                  for c in candidates}}
