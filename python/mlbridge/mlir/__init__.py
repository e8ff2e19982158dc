"""The MLIR pass plugin (integrations/mlir) from Python: find it, run the
stock ``mlir-opt-19`` with it, serve its decisions from a Python policy,
lower the kernels to executables and measure them (docs/mlir.md).

    from pathlib import Path
    from mlbridge.mlir import find_plugin, kernel_source, serve_unroll

    info = find_plugin()
    Path("matmul.mlir").write_text(kernel_source("matmul"))
    run = serve_unroll(info, "matmul.mlir", "out.mlir",
                       policy=lambda f: 3 if f["trip_count"] % 8 == 0 else 2)
    run.features, run.decisions, run.contexts   # one row per innermost loop

The pass asks one decision per innermost affine loop: the index of its unroll
factor in UNROLL_FACTORS (or one score per factor). Its features are FEATURES
(int64 [1] each); the advice is ``unroll_action``. Without a model it uses
DEFAULT_ACTION (factor 4, MLIR's affine-loop-unroll default).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from ..build_manifest import WithRunners, load
from ..errors import MLBridgeError
from ..llvm.plugins import find_llvm_tool
from ..toolchain import CompileError, callgrind, run_tool

#: The features of one innermost loop, in the plugin's order.
FEATURES = ("trip_count", "depth", "outer_trips", "body_ops", "loads", "stores",
            "float_ops", "int_ops", "iter_args", "step")
#: The actions: unroll factors.
UNROLL_FACTORS = (1, 2, 4, 8, 16)
#: affine-loop-unroll's default factor (4).
DEFAULT_ACTION = 2
ADVICE = "unroll_action"
PASS = "mlbridge-affine-unroll"


def description() -> dict:
    """The protocol the pass prints with ``describe=FILE`` (the LLVM
    plugins' form): int64 ``[1]`` features in FEATURES order, the int64
    advice, the factor of each action (a test compares both sides)."""
    def spec(name):
        return {"name": name, "type": "int64_t", "port": 0, "shape": [1]}
    return {"features": [spec(f) for f in FEATURES], "optional_features": [],
            "advice": spec(ADVICE), "lists": {"UnrollFactor": [str(f) for f in UNROLL_FACTORS]}}

_REPO_ROOT = Path(__file__).resolve().parents[3]
KERNELS_DIR = _REPO_ROOT / "integrations" / "mlir" / "kernels"

#: How a kernel is lowered to LLVM IR (then mlir-translate-19 and clang-19).
LOWERING = ("--lower-affine", "--expand-strided-metadata", "--lower-affine",
            "--convert-scf-to-cf", "--finalize-memref-to-llvm",
            "--convert-math-to-llvm", "--convert-arith-to-llvm", "--convert-func-to-llvm",
            "--convert-cf-to-llvm", "--convert-index-to-llvm",
            "--reconcile-unrealized-casts")
#: clang-19 flags of the lowered kernels.
CLANG_FLAGS = ("-O2", "-Wno-override-module")
TIMEOUT = 120.0


@dataclass
class MLIRPluginInfo(WithRunners):
    """The built plugin, as the build manifest's ``mlir_plugin`` section
    describes it (:mod:`mlbridge.build_manifest`)."""

    unroll: Path
    runners: Dict[str, bool] = field(default_factory=dict)
    llvm_bin_dir: str = ""
    source: Optional[Path] = None
    mlir_major: int = 19

    def mlir_opt(self) -> str:
        """The mlir-opt this plugin loads into: Debian's mlir-opt-19, or the
        one scripts/deps/mlir22.sh extracted for the MLIR 22 build."""
        if self.mlir_major == 19:
            return find_llvm_tool("mlir-opt-19")
        return str(Path(self.llvm_bin_dir) / "mlir-opt")


#: The build manifest's section of each MLIR version's plugin (22: opt-in).
PLUGIN_SECTIONS = {19: "mlir_plugin", 22: "mlir_plugin_mlir22"}


def find_plugin(build_dir=None, mlir: int = 19) -> MLIRPluginInfo:
    """The plugin for MLIR ``mlir`` (19, or 22 when the build was configured
    with ``MLBRIDGE_MLIR22_ROOT``) of the build in ``build_dir``,
    ``$MLBRIDGE_BUILD_DIR`` or ``<repo>/build``; raises
    :class:`mlbridge.build_manifest.ComponentOff` when the build left it out."""
    if mlir not in PLUGIN_SECTIONS:
        raise ValueError(f"mlir={mlir!r}: the plugin is built for MLIR {sorted(PLUGIN_SECTIONS)}")
    manifest = load(build_dir)
    sec = manifest.section(PLUGIN_SECTIONS[mlir], paths=("unroll",))
    return MLIRPluginInfo(Path(sec["unroll"]), dict(sec.get("runners", {})),
                          sec.get("llvm_bin_dir", ""), manifest.path, mlir)


# ---- kernels -----------------------------------------------------------------------


def kernel_names() -> List[str]:
    """The kernels under integrations/mlir/kernels (common.mlir excluded)."""
    return sorted(p.stem for p in KERNELS_DIR.glob("*.mlir") if p.stem != "common")


def kernel_source(name: str) -> str:
    """A kernel's complete module text: its file and the shared helpers."""
    return (KERNELS_DIR / f"{name}.mlir").read_text() + (KERNELS_DIR / "common.mlir").read_text()


def _run(cmd: Sequence[str], what: str, timeout: float = TIMEOUT, **kw) -> Tuple[str, str]:
    """(stdout, stderr) of one program run through the compiler layer."""
    try:
        return run_tool(cmd, timeout=timeout, stderr=True, **kw)
    except CompileError as e:
        raise MLBridgeError(f"{what} failed: {e}") from None


def pass_pipeline(**options: str) -> str:
    """``builtin.module(mlbridge-affine-unroll{k=v ...})``."""
    opts = " ".join(f"{k.replace('_', '-')}={v}" for k, v in options.items())
    return f"builtin.module({PASS}{{{opts}}})" if opts else f"builtin.module({PASS})"


def unroll_command(info: MLIRPluginInfo, src: Path, out: Path, **options: str) -> List[str]:
    """The mlir-opt command (of the plugin's MLIR) running its pass on ``src``."""
    return [info.mlir_opt(), f"--load-pass-plugin={info.unroll}",
            f"--pass-pipeline={pass_pipeline(**options)}", str(src), "-o", str(out)]


def build_executable(mlir_file: Path, exe: Path) -> Path:
    """Lowers an (unrolled) kernel module to LLVM and links it with the C
    driver: mlir-opt-19 LOWERING, mlir-translate-19, clang-19 CLANG_FLAGS."""
    exe = Path(exe).resolve()
    lowered = exe.with_suffix(".llvm.mlir")
    ll = exe.with_suffix(".ll")
    _run([find_llvm_tool("mlir-opt-19"), *LOWERING, str(mlir_file), "-o", str(lowered)],
         "lowering")
    _run([find_llvm_tool("mlir-translate-19"), "--mlir-to-llvmir", str(lowered), "-o", str(ll)],
         "mlir-translate-19")
    _run([find_llvm_tool("clang-19"), *CLANG_FLAGS, str(ll), str(KERNELS_DIR / "driver.c"),
          "-o", str(exe)], "clang-19")
    return exe


def run_output(exe: Path) -> str:
    """What the kernel prints: one exact (hex) checksum per output."""
    return _run([str(exe)], str(exe))[0]


def count_instructions(exe: Path, function: str = "kernel") -> int:
    """Instructions retired inside ``function`` (callgrind; repeatable,
    unlike time on a shared machine)."""
    try:
        return callgrind([exe], function=function, timeout=TIMEOUT).ir
    except CompileError as e:
        raise MLBridgeError(f"valgrind failed: {e}") from None


# ---- serving the pass from Python ------------------------------------------------------


def serve_unroll(info: MLIRPluginInfo, src: Path, out: Path,
                 policy: Callable[..., int], *, transport: str = "pipe",
                 serdes: str = "bitstream", timeout: float = TIMEOUT,
                 options: Optional[Dict[str, str]] = None):
    """Runs the pass on ``src`` with ``policy`` answering every loop (a
    callable from the observation -- feature name -> numpy array -- to an
    action index, as every mlbridge.llvm policy), over named pipes or
    gRPC. Returns the run: ``features`` (one row per loop, columns
    ``feature_names``), ``decisions``, ``contexts`` (the function of each
    loop), ``stderr``; raises if mlir-opt-19 fails."""
    from ..toolchain import serve_compiler

    opts = dict(options or {})
    if transport == "pipe":
        opts["format"] = serdes
    key = "channel" if transport == "pipe" else "server"
    run = serve_compiler(lambda endpoint: unroll_command(info, src, out, **opts, **{key: endpoint}),
                         policy, timeout=timeout, serdes=serdes, transport=transport)
    if run.returncode != 0:
        raise MLBridgeError(f"mlir-opt-19 failed ({run.returncode}):\n{run.stderr[-3000:]}")
    return run
