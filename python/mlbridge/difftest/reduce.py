"""Reduction of a failing program with cvise (Debian's ``cvise``), kept as a
regression case in tests/differential/cases.

The interestingness script keeps the failure in a program that builds and
ends at ``-O0``: for a crash, verifier or
compiler error, the build with the configuration still fails with the same
signature (:func:`mlbridge.difftest.checks.crash_signature`); for a wrong
output, the program must stay free of undefined behaviour (its ``-O0`` build
with ``-fsanitize=undefined,address`` runs clean and prints what plain
``-O0`` prints, and the warnings that mark UB-prone C are errors) while the
configuration's build prints something else. Each build goes through
``python -m mlbridge.difftest build``, which applies the configuration's
settings and serves its policy."""

from __future__ import annotations

import json
import shlex
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Optional

from ..errors import MLBridgeError
from ..llvm.plugins.corpus import csmith_include_dir, csmith_program
from .campaign import CASES_DIR
from .checks import (Program, build_and_run, check_program, crash_signature, reference, run)
from .configs import Config, Toolset

__all__ = ["interestingness_script", "reduce_program"]

#: C that a reduction must not drift into (undefined or meaningless code that
#: the sanitizers do not see), as errors.
UB_GUARDS = ("-Werror=implicit-int", "-Werror=implicit-function-declaration",
             "-Werror=return-type", "-Werror=uninitialized", "-Werror=int-conversion",
             "-Werror=incompatible-pointer-types", "-Werror=sometimes-uninitialized",
             "-Werror=pointer-to-int-cast", "-Werror=int-to-pointer-cast")


def interestingness_script(ts: Toolset, config: Config, case: str, flags, status: str,
                           signature: str, run_timeout: float = 10.0) -> str:
    """The shell script cvise runs in a directory holding ``case``."""
    q = shlex.quote
    py_env = (f"PYTHONPATH={q(str(Path(__file__).resolve().parents[2]))} "
              f"MLBRIDGE_BUILD_DIR={q(str(Path(ts.info.source).parent))}")
    build = (f"{py_env} {q(sys.executable)} -m mlbridge.difftest build --config {config.name} "
             f"--llvm {ts.llvm} -- {q(ts.clang)} {config.level} {' '.join(map(q, flags))} "
             f"{' '.join(map(q, ts.flags(config, 'clang')))} {q(case)} -o t.exe")
    # Whatever it keeps, the case stays a program that ends: a kept case is
    # checked like any program (its output against -O0).
    lines = ["#!/bin/sh", f"# keeps: {status} of {config.name} on LLVM {ts.llvm}",
             f"CC={q(ts.clang)}", f"FLAGS={q(' '.join(flags))}",
             f"$CC -O0 $FLAGS {q(case)} -o ref.exe >/dev/null 2>&1 || exit 1",
             f"timeout {run_timeout:g} ./ref.exe >ref.out 2>/dev/null || exit 1"]
    if status in ("wrong-output", "timeout"):
        lines += [
            f"$CC -O0 $FLAGS {' '.join(UB_GUARDS)} -fsanitize=undefined,address "
            f"-fno-sanitize-recover=all {q(case)} -o ub.exe >/dev/null 2>&1 || exit 1",
            f"timeout {run_timeout:g} ./ub.exe >ub.out 2>/dev/null || exit 1",
            "cmp -s ub.out ref.out || exit 1",
            f"{build} >/dev/null 2>&1 || exit 1",
            f"timeout {2 * run_timeout:g} ./t.exe >t.out 2>/dev/null; echo \"exit $?\" >>t.out",
            "echo 'exit 0' >>ref.out",
            "cmp -s t.out ref.out && exit 1",
            "exit 0"]
    else:
        lines += [f"{build} >/dev/null 2>err.txt && exit 1",
                  f"grep -qF {q(signature)} err.txt"]
    return "\n".join(lines) + "\n"


def reduce_program(ts: Toolset, config: Config, *, seed: Optional[int] = None,
                   source: Optional[Path] = None, max_funcs: int = 8, name: str,
                   seconds: float = 900, out_dir: Optional[Path] = None,
                   known: Optional[str] = None) -> Path:
    """Reduces the program (csmith ``seed`` or ``source``) that fails in
    ``config`` for at most ``seconds`` and keeps the result as
    ``<out_dir>/<name>.c`` with ``<name>.json`` (``known``: why the case
    still fails in ``config``, the bug it awaits). MLBridgeError when the
    program does not fail there, or when the reduction lost the failure."""
    out_dir = Path(out_dir or CASES_DIR)
    work = Path(tempfile.mkdtemp(prefix="mlbridge-reduce-"))
    try:
        case = work / "case.c"
        if seed is not None:
            csmith_program(seed, case, max_funcs=max_funcs)
            origin = f"csmith --seed {seed} --max-funcs {max_funcs}, reduced by cvise"
        else:
            shutil.copyfile(source, case)
            origin = f"{source}, reduced by cvise"
        flags = ["-w", f"-I{csmith_include_dir()}"]
        prog = Program(name, [case], flags, origin)
        ref = reference(ts, prog, work, timeout=10.0)
        if ref is None:
            raise MLBridgeError(f"{case}: the -O0 build fails or runs past 10 s")
        first = check_program(ts, config, prog, ref, work)
        if not first.failed:
            raise MLBridgeError(f"{name}: no failure in {config.name} on LLVM {ts.llvm}")
        signature = ""
        if first.status not in ("wrong-output", "timeout"):
            _, r, _ = build_and_run(ts, config, prog, config.level, work,
                                    compile_timeout=300, run_timeout=10)
            signature = crash_signature(r.stderr)
            if not signature:
                raise MLBridgeError(f"{name}: {first.status} without a signature to keep")
        script = work / "interesting.sh"
        script.write_text(interestingness_script(ts, config, case.name, flags, first.status,
                                                 signature))
        script.chmod(0o755)
        if run(["sh", script.name], timeout=600, cwd=work).returncode != 0:
            raise MLBridgeError(f"{name}: the interestingness script does not keep the "
                                f"failure ({script})")
        # cvise writes each smaller interesting variant into case.c: what the
        # time bound leaves is reduced as far as it got.
        run(["cvise", "--n", "1", "--tidy", "--timeout", "120", script.name, case.name],
            timeout=seconds, cwd=work)
        reduced = Program(name, [case], flags, origin)
        ref = reference(ts, reduced, work, timeout=10.0)
        if ref is None or not check_program(ts, config, reduced, ref, work).failed:
            raise MLBridgeError(f"{name}: the reduced program no longer fails ({work})")
        out_dir.mkdir(parents=True, exist_ok=True)
        kept = out_dir / f"{name}.c"
        shutil.copyfile(case, kept)
        meta = {"flags": ["-w", "-I{csmith_include}"], "origin": origin,
                "found": {"config": config.name, "llvm": ts.llvm, "status": first.status,
                          "signature": signature, "detail": first.detail[:300]}}
        if known:
            meta["known"] = {config.name: known}
        kept.with_suffix(".json").write_text(json.dumps(meta, indent=1) + "\n")
    except BaseException:
        print(f"the reduction's files are kept in {work}", file=sys.stderr)
        raise
    shutil.rmtree(work, ignore_errors=True)
    return kept
