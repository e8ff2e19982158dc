"""mlb-loop-pragmas (integrations/c) from Python: find it, run it, serve its
per-loop questions from a Python policy (docs/c-tool.md).

    from mlbridge.c_tool import find_tool, serve_pragmas

    tool = find_tool()
    run = serve_pragmas(tool, "in.c", "out.c", policy=lambda f: 2 if f["innermost"] else 0)

The tool asks one question per loop (for, while, do) of the input file:
FEATURES (int64 [1] each) in, ``pragma_action`` (an index into ACTIONS;
an ONNX model may answer one score per action) out. Action 0, no pragma,
is also what every loop gets when the model is absent or fails.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence

from .build_manifest import NotBuilt, WithRunners, section
from .errors import MLBridgeError

FEATURES = ("depth", "trip_count", "body_stmts", "calls", "array_refs", "float_ops",
            "innermost", "loop_kind")
ADVICE = "pragma_action"
#: What each action puts before the loop (None: nothing).
ACTIONS = (
    None,
    "#pragma clang loop unroll_count(2)",
    "#pragma clang loop unroll_count(4)",
    "#pragma clang loop unroll_count(8)",
    "#pragma clang loop vectorize_width(2) interleave_count(1)",
    "#pragma clang loop vectorize_width(4) interleave_count(2)",
    "#pragma clang loop vectorize(disable) unroll(disable)",
)

#: The libclang versions the tool is built against, and the build manifest's
#: section of each (``mlb-loop-pragmas``, ``mlb-loop-pragmas-22``).
TOOL_SECTIONS = {19: "c_tool", 22: "c_tool_llvm22"}


@dataclass
class CToolInfo(WithRunners):
    tool: Path
    runners: Dict[str, bool] = field(default_factory=dict)
    llvm_major: int = 19


def find_tool(build_dir=None, llvm: Optional[int] = None) -> CToolInfo:
    """The tool on libclang ``llvm`` (19 or 22; default: the LLVM version of
    :func:`mlbridge.toolchain.toolchain`'s clang, ``$MLBRIDGE_CLANG``) of the
    build in ``build_dir``, ``$MLBRIDGE_BUILD_DIR`` or ``<repo>/build`` (the
    build manifest's section of that version); raises
    :class:`mlbridge.build_manifest.ComponentOff` when the build left it out."""
    if llvm is None:
        from .toolchain import toolchain
        llvm = toolchain().major
    if llvm not in TOOL_SECTIONS:
        raise NotBuilt(f"mlb-loop-pragmas is built for libclang "
                       f"{' and '.join(map(str, TOOL_SECTIONS))}, not {llvm}")
    sec = section(TOOL_SECTIONS[llvm], paths=("tool",), build_dir=build_dir)
    return CToolInfo(Path(sec["tool"]), dict(sec.get("runners", {})), llvm)


def command(info: CToolInfo, src, out, *options: str, clang_args: Sequence[str] = ()) -> List[str]:
    cmd = [str(info.tool), *map(str, options), "-o", str(out), str(src)]
    return cmd + ["--", *clang_args] if clang_args else cmd


def serve_pragmas(info: CToolInfo, src, out, policy: Callable[..., int], *,
                  transport: str = "pipe", serdes: str = "bitstream", timeout: float = 60.0,
                  options: Sequence[str] = ()):
    """Runs the tool on ``src`` with ``policy`` (observation: feature name ->
    numpy array; returns the action)
    answering every loop over a pipe or gRPC; returns the run
    (``features``, ``decisions``, ``contexts``, ``stderr``)."""
    from .toolchain import serve_compiler

    def cmd(endpoint):
        how = (["--channel", endpoint, "--format", serdes] if transport == "pipe"
               else ["--server", endpoint])
        return command(info, src, out, *how, *options)

    run = serve_compiler(cmd, policy, timeout=timeout, serdes=serdes, transport=transport)
    if run.returncode != 0:
        raise MLBridgeError(f"mlb-loop-pragmas failed ({run.returncode}):\n{run.stderr[-3000:]}")
    return run
