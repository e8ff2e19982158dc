"""mlbridge.mir2vec: MIR2Vec-style vectors of machine code on LLVM 19 and 22.

Our own (docs/ir2vec.md, "MIR2Vec"): LLVM 22's ``llvm-ir2vec --mode=mir``
crashes on real MIR, LLVM 19 has no MIR2Vec, and no machine vocabulary is
published. The llc pass ``mlbridge-mir2vec`` (``MLBridgeMIR2Vec.so``, one
build per LLVM version; integrations/llvm/mir2vec/MachineEmbeddings.h)
extracts the triplets and computes the vectors; this module runs it and
trains the vocabulary::

    from mlbridge import mir2vec

    mir = mir2vec.machine_ir("m.bc", "m.mir")            # llc -O2 -stop-after=finalize-isel
    trips = mir2vec.triplets(mir)                        # {function: [(head, relation, tail)]}
    vocab = mir2vec.train_vocabulary([trips], dim=64)    # TransE, torch, deterministic
    mir2vec.write_vocabulary(vocab, "vocab.json")
    vecs = mir2vec.embed(mir, "vocab.json", llvm=22)      # {function: {"vector", "blocks", ...}}

Command line: ``python -m mlbridge.mir2vec train --out build/mir2vec/vocab.json``
(triplets of the corpus' training split only, then TransE).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np

from .errors import MLBridgeError
from .ir2vec import load_finite_json
from .toolchain import CompileError, run_tool

FORMAT = "mlbridge-mir2vec-vocab-1"
RELATIONS = ("next", "arg")
Triplet = Tuple[str, str, str]


class MIR2VecError(MLBridgeError, RuntimeError):
    """llc or the pass failed (the message is theirs), or a vocabulary or
    output file is not what the pass reads or writes."""


def _plugins(llvm: int, build_dir=None):
    from .llvm.plugins import find_plugins
    info = find_plugins(build_dir, llvm=llvm)
    if info.mir2vec is None or not Path(info.mir2vec).is_file():
        raise MIR2VecError(f"MLBridgeMIR2Vec.so for LLVM {llvm} is not built "
                           "(cmake --build build --target mlbridge-llvm-plugins)")
    return info


def machine_ir(module, out, *, llvm: int = 19, stop_after: str = "finalize-isel",
               opt_level: str = "-O2", passes: Optional[str] = None,
               timeout: float = 600.0) -> Path:
    """Machine IR of an LLVM module (.ll/.bc) from that version's llc, stopped
    after ``stop_after`` (finalize-isel: virtual registers, what a register
    allocator sees); ``passes`` (e.g. ``"default<Oz>"``) first runs that
    version's opt on the module (for IR not optimised yet)."""
    from .llvm.plugins import find_llvm_tool
    module = os.fspath(module)
    if passes:
        optimized = os.fspath(out) + ".opt.bc"
        run_tool([find_llvm_tool(f"opt-{llvm}"), f"-passes={passes}", module, "-o", optimized],
                 timeout=timeout)
        module = optimized
    try:
        run_tool([find_llvm_tool(f"llc-{llvm}"), opt_level, f"-stop-after={stop_after}", module,
                  "-o", os.fspath(out)], timeout=timeout)
    finally:
        if passes:
            Path(module).unlink(missing_ok=True)
    return Path(out)


def _run_pass(mir, options: Sequence[str], llvm: int, build_dir, timeout: float):
    from .llvm.plugins import tool_env
    info = _plugins(llvm, build_dir)
    cmd = [info.tool("llc"), "-load", os.fspath(info.mir2vec), "-run-pass=mlbridge-mir2vec",
           *options, os.fspath(mir), "-o", os.devnull]
    try:
        run_tool(cmd, timeout=timeout, env=tool_env(info))
    except CompileError as e:
        raise MIR2VecError(str(e)) from None


def _read_lines(path: Path) -> List[dict]:
    if not path.exists():
        return []
    try:
        return [load_finite_json(line) for line in path.read_text().splitlines()
                if line.strip()]
    except ValueError as e:
        raise MIR2VecError(f"{path}: not the pass's JSON lines ({e})") from None


def triplets(mir, *, llvm: int = 19, build_dir=None,
             timeout: float = 600.0) -> Dict[str, List[Triplet]]:
    """{machine function: [(head, relation, tail), ...]} of a .mir file."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "triplets.jsonl"
        _run_pass(mir, [f"-mlbridge-mir2vec-triplets={out}"], llvm, build_dir, timeout)
        # No file: the module has no machine function.
        return {r["function"]: [tuple(t) for t in r["triplets"]] for r in _read_lines(out)}


def embed(mir, vocabulary, *, llvm: int = 19, instructions: bool = False, build_dir=None,
          timeout: float = 600.0) -> Dict[str, dict]:
    """{machine function: {"vector": ndarray(D), "blocks": ndarray(B, D)[,
    "instructions": [(entities, ndarray(D))]]}} computed by the pass."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "vectors.jsonl"
        opts = [f"-mlbridge-mir2vec-out={out}", f"-mlbridge-mir2vec-vocab={vocabulary}"]
        if instructions:
            opts.append("-mlbridge-mir2vec-instructions")
        _run_pass(mir, opts, llvm, build_dir, timeout)
        result = {}
        for r in _read_lines(out):
            entry = {"vector": np.asarray(r["vector"], np.float64),
                     "blocks": np.asarray(r["blocks"], np.float64).reshape(-1, r["dimension"])}
            if instructions:
                entry["instructions"] = [(i["entities"], np.asarray(i["vector"], np.float64))
                                         for i in r["instructions"]]
            result[r["function"]] = entry
        return result


# ---- the vocabulary: TransE -------------------------------------------------------


def train_vocabulary(triplet_sets: Iterable[Dict[str, List[Triplet]]], *, dim: int = 64,
                     epochs: int = 200, margin: float = 1.0, lr: float = 0.01,
                     batch: int = 1024, seed: int = 0) -> dict:
    """A TransE vocabulary (IR2Vec's recipe: entity and relation vectors with
    head + relation ~ tail, margin ranking loss against corrupted triplets,
    entity vectors renormalised to unit length) from the distinct triplets
    of ``triplet_sets``. Deterministic for a seed (torch on the CPU)."""
    import torch
    distinct = sorted({t for ts in triplet_sets for fn in ts.values() for t in fn})
    if not distinct:
        raise MIR2VecError("no triplets to train on")
    entities = sorted({t[0] for t in distinct} | {t[2] for t in distinct})
    eid = {e: i for i, e in enumerate(entities)}
    rid = {r: i for i, r in enumerate(RELATIONS)}
    data = torch.tensor([[eid[h], rid[r], eid[t]] for h, r, t in distinct], dtype=torch.long)
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    bound = 6.0 / dim ** 0.5
    E = torch.nn.Parameter(torch.empty(len(entities), dim).uniform_(-bound, bound, generator=gen))
    R = torch.nn.Parameter(torch.empty(len(RELATIONS), dim).uniform_(-bound, bound, generator=gen))
    with torch.no_grad():
        R /= R.norm(dim=1, keepdim=True)
    optim = torch.optim.Adam([E, R], lr=lr)
    losses = []
    for _ in range(epochs):
        with torch.no_grad():
            E /= E.norm(dim=1, keepdim=True).clamp_min(1e-12)
        order = torch.randperm(len(data), generator=gen)
        total = 0.0
        for start in range(0, len(data), batch):
            b = data[order[start:start + batch]]
            corrupt = b.clone()
            heads = torch.rand(len(b), generator=gen) < 0.5
            randoms = torch.randint(len(entities), (len(b),), generator=gen)
            corrupt[heads, 0] = randoms[heads]
            corrupt[~heads, 2] = randoms[~heads]

            def dist(t):
                return (E[t[:, 0]] + R[t[:, 1]] - E[t[:, 2]]).abs().sum(dim=1)
            loss = torch.relu(margin + dist(b) - dist(corrupt)).mean()
            optim.zero_grad()
            loss.backward()
            optim.step()
            total += float(loss) * len(b)
        losses.append(total / len(data))
    with torch.no_grad():
        E /= E.norm(dim=1, keepdim=True).clamp_min(1e-12)
    return {"format": FORMAT, "dimension": dim,
            "entities": {e: [float(x) for x in E[i].tolist()] for e, i in eid.items()},
            "relations": {r: [float(x) for x in R[i].tolist()] for r, i in rid.items()},
            "training": {"triplets": len(distinct), "entities": len(entities), "epochs": epochs,
                         "margin": margin, "lr": lr, "batch": batch, "seed": seed,
                         "loss_first": losses[0], "loss_last": losses[-1]}}


def link_prediction(vocab: dict, triplet_sets: Iterable[Dict[str, List[Triplet]]],
                    exclude: Iterable[Triplet] = ()) -> dict:
    """Tail prediction on the distinct triplets of ``triplet_sets`` whose
    entities the vocabulary has, less ``exclude`` (e.g. the training
    triplets): the rank of the true tail among all entities by ``|head +
    relation - tail|_1`` (1 = best); ``hits@k`` the share ranked within k,
    ``random_hits@10`` what random ranking gives."""
    names = sorted(vocab["entities"])
    E = np.array([vocab["entities"][n] for n in names])
    index = {n: i for i, n in enumerate(names)}
    R = {r: np.asarray(v) for r, v in vocab["relations"].items()}
    test = sorted({t for ts in triplet_sets for fn in ts.values() for t in fn
                   if t[0] in index and t[2] in index} - set(exclude))
    ranks = []
    for h, r, t in test:
        d = np.abs(E[index[h]] + R[r] - E).sum(axis=1)
        ranks.append(1 + int(np.sum(d < d[index[t]])))
    ranks = np.asarray(ranks)
    return {"triplets": len(test), "mean_rank": float(ranks.mean()) if len(ranks) else None,
            "hits@1": float(np.mean(ranks <= 1)) if len(ranks) else None,
            "hits@10": float(np.mean(ranks <= 10)) if len(ranks) else None,
            "random_hits@10": min(1.0, 10 / len(names))}


def write_vocabulary(vocab: dict, path) -> Path:
    """Writes ``vocab`` as JSON (atomically); refuses one with a value that
    is not finite (a diverged training; the pass would refuse the file)."""
    for section, what in (("entities", "entity"), ("relations", "relation")):
        for name, vector in vocab.get(section, {}).items():
            bad = next((x for x in vector if not np.isfinite(x)), None)
            if bad is not None:
                raise MIR2VecError(f"vocabulary for {path}: {what} '{name}' holds {bad} "
                                   "(not finite); nothing written")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    try:
        text = json.dumps(vocab, allow_nan=False)
    except ValueError as e:  # e.g. a NaN loss in "training"
        raise MIR2VecError(f"vocabulary for {path}: {e}; nothing written") from None
    tmp.write_text(text)
    tmp.replace(path)
    return path


# ---- command line -----------------------------------------------------------------


def _train_main(args) -> int:
    from .corpus import Corpus
    corpus = Corpus.load(args.manifest)
    t0 = time.monotonic()

    def collect(split, count):
        units = list(corpus.modules(split=split))
        # Every k-th unit: libraries spread, bounded work.
        chosen = units[::max(1, len(units) // count)][:count]
        sets, failed = [], []
        with tempfile.TemporaryDirectory() as tmp:
            for i, m in enumerate(chosen):
                mir = Path(tmp) / f"{i}.mir"
                try:
                    # The corpus IR is clang -Oz before its optimisations: run them.
                    machine_ir(m.ir(), mir, llvm=args.llvm, passes="default<Oz>")
                    sets.append(triplets(mir, llvm=args.llvm))
                except (CompileError, MIR2VecError) as e:  # counted and reported
                    failed.append(f"{m.name}: {e}")
        return chosen, sets, failed

    chosen, sets, failed = collect("train", args.units)
    vocab = train_vocabulary(sets, dim=args.dim, epochs=args.epochs, seed=args.seed)
    t = vocab["training"]
    t.update(units=[m.name for m in chosen], failed_units=failed, split="train", llvm=args.llvm,
             command=" ".join(["python -m mlbridge.mir2vec train", *sys.argv[2:]]))
    if args.validation_units:
        vchosen, vsets, vfailed = collect("validation", args.validation_units)
        seen = {x for ts in sets for fn in ts.values() for x in fn}
        t["validation"] = dict(link_prediction(vocab, vsets),
                               unseen=link_prediction(vocab, vsets, exclude=seen),
                               units=[m.name for m in vchosen], failed_units=vfailed)
    t["seconds"] = round(time.monotonic() - t0, 1)
    write_vocabulary(vocab, args.out)
    print(f"mlbridge.mir2vec: {t['entities']} entities from {t['triplets']} distinct triplets "
          f"of {len(chosen) - len(failed)} training units ({len(failed)} failed); loss "
          f"{t['loss_first']:.4f} -> {t['loss_last']:.4f}; validation: "
          f"{json.dumps({k: v for k, v in t.get('validation', {}).items() if 'units' not in k})}"
          f"; wrote {args.out}", file=sys.stderr)
    return 0


def main(argv=None) -> int:
    from . import cli
    p = cli.ArgumentParser(prog="python -m mlbridge.mir2vec")
    sub = p.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("train", help="a TransE vocabulary from the corpus' training split")
    t.add_argument("--out", type=lambda text: Path(cli.output_file(text)),
                   default="build/mir2vec/vocab.json")
    t.add_argument("--manifest", default=None, help="corpus manifest (default: the repo's)")
    t.add_argument("--units", type=cli.positive_int, default=40)
    t.add_argument("--dim", type=int, default=64)
    t.add_argument("--epochs", type=int, default=200)
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--llvm", type=int, default=19, choices=(19, 22))
    t.add_argument("--validation-units", type=int, default=12,
                   help="units of the validation split for the link-prediction check")
    args = p.parse_args(argv)
    return cli.run(f"mlbridge.mir2vec {args.cmd}", _train_main, args)


if __name__ == "__main__":
    sys.exit(main())
