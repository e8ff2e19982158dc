"""IR2Vec embeddings of LLVM modules from Python (docs/ir2vec.md).

On LLVM 19 the vectors come from our embedder (integrations/llvm/ir2vec), on
LLVM 22 from LLVM's own; both run in the ``mlbridge-ir2vec`` pass of the
``MLBridgeIR2Vec`` plugin inside that version's ``opt``, with IR2Vec's seed
vocabulary (``scripts/deps/ir2vec.sh``)::

    from mlbridge import ir2vec

    vecs = ir2vec.embed("m.bc")                          # {"main": array([...300])}
    mod = ir2vec.embed("m.bc", llvm=22, level="module")  # array([...300])
    blocks = ir2vec.embed("m.bc", level="block")         # {"main": array([n_blocks, 300])}
    insts = ir2vec.embed("m.bc", level="instruction")    # {"main": array([n_insts, 300])}

``opt`` runs through the compiler layer (:func:`mlbridge.toolchain.run_tool`):
it is killed on any error or timeout.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Union

import numpy as np

from . import build_manifest
from .errors import MLBridgeError
from .toolchain import CompileError, run_tool

__all__ = ["embed", "find", "command", "read_report", "load_finite_json", "Setup",
           "IR2VecError", "IR2VecNotFound", "LEVELS", "KINDS", "LOADERS", "VERSIONS"]

LEVELS = ("function", "module", "block", "instruction")
#: Who reads the vocabulary on LLVM 22: LLVM's analysis (-ir2vec-vocab-path)
#: or PluginEmbeddings, what the plugins use (-mlbridge-ir2vec-vocab; LLVM 19's only).
LOADERS = ("llvm", "mlbridge")
KINDS = ("symbolic", "flow-aware")
VERSIONS = (19, 22)


class IR2VecError(MLBridgeError):
    """opt failed to embed the module (its message is in the exception)."""


class IR2VecNotFound(IR2VecError, FileNotFoundError):
    """The plugin, opt or the vocabulary is not where the build says."""


@dataclass(frozen=True)
class Setup:
    """What embedding on one LLVM version needs (from the build manifest's
    ``ir2vec`` section)."""

    llvm: int
    version: str
    plugin: Path
    opt: Path
    vocabulary: Path


def find(llvm: int = 19, build_dir=None) -> Setup:
    """The plugin, opt and vocabulary of LLVM ``llvm`` (19 or 22), from the
    build manifest's ``ir2vec`` section (build directory: ``build_dir``,
    ``$MLBRIDGE_BUILD_DIR`` or ``<repo>/build``). Every file must exist."""
    if llvm not in VERSIONS:
        raise ValueError(f"llvm={llvm!r}: expected one of {VERSIONS}")
    try:
        data = build_manifest.section("ir2vec", build_dir=build_dir)
    except build_manifest.NotBuilt as e:
        raise IR2VecNotFound(f"the IR2Vec plugins are not built: {e}") from None
    entry = data.get(f"llvm{llvm}")
    if entry is None:
        raise IR2VecNotFound(f"the build has no IR2Vec plugin for LLVM {llvm} (LLVM 22: "
                             f"install llvm-22-dev, scripts/deps/llvm22.apt, and reconfigure)")
    setup = Setup(llvm, entry["version"], Path(entry["plugin"]), Path(entry["opt"]),
                  Path(data["vocabulary"][f"llvm{llvm}"]))
    for what, p, fix in (("plugin", setup.plugin, "build the target MLBridgeIR2Vec"
                          + ("22" if llvm == 22 else "")),
                         ("opt", setup.opt, f"install llvm-{llvm}"),
                         ("vocabulary", setup.vocabulary, "run scripts/deps/ir2vec.sh")):
        if not p.is_file():
            raise IR2VecNotFound(f"the IR2Vec {what} for LLVM {llvm} is missing: {p} ({fix})")
    return setup



def command(module_path, out_path, setup: Setup, kind: str = "symbolic",
            blocks: bool = False, vocabulary=None, instructions: bool = False,
            loader: Optional[str] = None) -> List[str]:
    """The opt command line that writes the vectors of ``module_path`` to
    ``out_path`` (what :func:`embed` runs)."""
    if kind not in KINDS:
        raise ValueError(f"kind={kind!r}: expected one of {KINDS}")
    loader = loader or ("llvm" if setup.llvm == 22 else "mlbridge")
    if loader not in LOADERS or (loader == "llvm" and setup.llvm != 22):
        raise ValueError(f"loader={loader!r}: LLVM {setup.llvm} has "
                         f"{LOADERS if setup.llvm == 22 else ('mlbridge',)}")
    vocab = Path(vocabulary) if vocabulary is not None else setup.vocabulary
    vocab_flag = "-ir2vec-vocab-path" if loader == "llvm" else "-mlbridge-ir2vec-vocab"
    cmd = [str(setup.opt), f"-load-pass-plugin={setup.plugin}", "-passes=mlbridge-ir2vec",
           f"{vocab_flag}={vocab}", f"-mlbridge-ir2vec-out={out_path}",
           f"-mlbridge-ir2vec-kind={kind}", "-disable-output", str(module_path)]
    if blocks:
        cmd.insert(-2, "-mlbridge-ir2vec-blocks")
    if instructions:
        cmd.insert(-2, "-mlbridge-ir2vec-instructions")
    return cmd


def _no_constant(name):
    raise ValueError(f"{name} is not a finite number")


def load_finite_json(text: str):
    """``json.loads`` refusing ``NaN`` and ``Infinity`` (Python's extension
    of JSON): vectors and vocabularies hold finite numbers only."""
    return json.loads(text, parse_constant=_no_constant)


def read_report(path, level: str = "function"):
    """The vectors of a plugin output file at ``level`` (see :func:`embed`)."""
    if level not in LEVELS:
        raise ValueError(f"level={level!r}: expected one of {LEVELS}")
    try:
        data = load_finite_json(Path(path).read_text())
    except ValueError as e:
        raise IR2VecError(f"{path}: not an mlbridge-ir2vec-1 file ({e})") from None
    if data.get("format") != "mlbridge-ir2vec-1":
        raise IR2VecError(f"{path}: not an mlbridge-ir2vec-1 file")
    dim = int(data["dimension"])
    if level == "module":
        return np.asarray(data["module"], dtype=np.float64)
    if level == "function":
        return {f["name"]: np.asarray(f["vector"], dtype=np.float64) for f in data["functions"]}
    key = "blocks" if level == "block" else "instructions"
    if any(key not in f for f in data["functions"]):
        raise IR2VecError(f"{path}: written without -mlbridge-ir2vec-{key}")
    return {f["name"]: np.asarray(f[key], dtype=np.float64).reshape(-1, dim)
            for f in data["functions"]}


def embed(module_path, llvm: int = 19, level: str = "function", kind: str = "symbolic",
          vocabulary=None, build_dir=None, timeout: float = 600.0,
          loader: Optional[str] = None) -> Union[np.ndarray, Dict[str, np.ndarray]]:
    """IR2Vec vectors (float64, the vocabulary's dimension) of the LLVM module
    ``module_path`` (.bc or .ll) computed on LLVM ``llvm`` (19: ours, 22:
    LLVM's own embedder).

    ``level``: ``"function"`` -> {function name: vector} over the module's
    definitions; ``"module"`` -> the sum of those; ``"block"`` -> {function
    name: [n_blocks, dim]} in block order; ``"instruction"`` -> {function
    name: [n_instructions, dim]}, every instruction a block sums (no debug
    intrinsics or pseudo probes) in function order. ``kind``:
    ``"symbolic"`` or ``"flow-aware"``. ``vocabulary`` overrides the
    installed one (LLVM 19: IR2Vec's text file, LLVM 22: the converted JSON).
    ``loader`` (LLVM 22 only): ``"llvm"`` (default, LLVM's vocabulary
    analysis) or ``"mlbridge"`` (PluginEmbeddings, what plugins use). Raises
    :class:`IR2VecError` with opt's message when opt fails or exceeds
    ``timeout`` seconds (it is killed)."""
    if level not in LEVELS:
        raise ValueError(f"level={level!r}: expected one of {LEVELS}")
    if not Path(module_path).is_file():
        raise FileNotFoundError(f"no such module: {module_path}")
    setup = find(llvm, build_dir)
    with tempfile.TemporaryDirectory(prefix="mlbridge-ir2vec-") as tmp:
        out = Path(tmp) / "vectors.json"
        cmd = command(module_path, out, setup, kind=kind, blocks=level == "block",
                      vocabulary=vocabulary, instructions=level == "instruction",
                      loader=loader)
        try:
            run_tool(cmd, timeout=timeout)
        except CompileError as e:
            if "timed out" in str(e):
                raise IR2VecError(f"opt-{llvm} did not finish embedding {module_path} "
                                  f"within {timeout} s (killed)") from None
            raise IR2VecError(f"opt-{llvm} failed embedding {module_path}: {e}") from None
        if not out.is_file():
            raise IR2VecError(f"opt-{llvm} wrote no vectors for {module_path}")
        return read_report(out, level)
