"""End to end: both size plugins (the inline advisor and the phase-ordering
pass) loaded into lld's ThinLTO backends, several modules on several threads
in one process (LLVM 19 and 22).

lld makes a PassBuilder per module and backend thread and loads the
plugins' callbacks into each, so any state a plugin shares across modules
is shared across threads. The phase-ordering pass used to switch the
machine outliner with LLVM's process-wide -enable-machine-outliner option:
one module's decision changed the code of another module generated at the
same time (a two-thread link differed from a one-thread link). Each
decision is now the module's own ("nooutline" on its functions), so:

* links with --thinlto-jobs=2 and 8 are byte for byte the link with 1,
  several times over, with the shipped policies (settings from MLBRIDGE_*
  environment variables: lld parses -mllvm before it loads plugins);
* the program prints what plain -Oz's build prints;
* every module had its episode (the phase-ordering log has one line per
  module and backend).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import plugins_of_each_llvm

from build_components import require_component
from mlbridge import toolchain

#: Modules of the generated program (one main, the rest library units).
UNITS = 8
#: Links per thread count (the failure this guards against was a race).
REPEATS = 3
#: The start the shipped phase-ordering policy was trained from, and the
#: machine outliner on and off per module follows from its decisions.
PO_START = "mergefunc,machine-outliner"


plugins = plugins_of_each_llvm()


@pytest.fixture(scope="module")
def lld(llvm_major) -> str:
    path = shutil.which(f"ld.lld-{llvm_major}")
    if path is None:
        pytest.fail(f"ld.lld-{llvm_major} not found: run scripts/install-deps.sh "
                    "(scripts/deps/plugins.apt installs lld)", pytrace=False)
    return path


def unit_source(i: int) -> str:
    """A unit with similar code in several functions (what both outliners
    and function merging look for), different per unit. Odd units keep
    their four helpers (noinline: 5 functions), even ones inline them (1)."""
    attr = "__attribute__((noinline))" if i % 2 else "static inline __attribute__((always_inline))"
    body = []
    for f in range(4):
        body.append(f"""
{attr} int u{i}_f{f}(const int *a, int n, int k) {{
  int s = {i + 1};
  for (int j = 0; j < n; ++j) {{
    int v = a[j] * (k + {f}) + (j ^ {i});
    if (v & 1) s += v >> {1 + f % 3}; else s -= v * {3 + i % 4};
    s ^= (s << 5) + (s >> 2) + {f * 7 + i};
  }}
  return s;
}}""")
    calls = " + ".join(f"u{i}_f{f}(a, n, k + {f})" for f in range(4))
    return "\n".join(body) + f"\nint unit{i}(const int *a, int n, int k) {{ return {calls}; }}\n"


def main_source() -> str:
    decls = "\n".join(f"int unit{i}(const int *a, int n, int k);" for i in range(1, UNITS))
    calls = "\n".join(f'  printf("%d\\n", unit{i}(a, 64, {i}));' for i in range(1, UNITS))
    return f"""#include <stdio.h>
{decls}
int main(void) {{
  int a[64];
  for (int i = 0; i < 64; ++i) a[i] = i * 37 % 101 - 50;
{calls}
  return 0;
}}
"""


@pytest.fixture(scope="module")
def program(tmp_path_factory, clang, e2e):
    """The units compiled to ThinLTO bitcode with clang -Oz (no plugin: the
    plugins run in the link), and what plain -Oz's executable prints."""
    out = tmp_path_factory.mktemp("thinlto")
    sources = [out / "main.c"]
    sources[0].write_text(main_source())
    for i in range(1, UNITS):
        sources.append(out / f"unit{i}.c")
        sources[-1].write_text(unit_source(i))
    objects = []
    for src in sources:
        obj = src.with_suffix(".o")
        e2e.run_checked([clang, "-Oz", "-flto=thin", "-c", str(src), "-o", str(obj)])
        objects.append(obj)
    plain = out / "plain.exe"
    e2e.run_checked([clang, "-Oz", *map(str, sources), "-o", str(plain)])
    return {"dir": out, "objects": objects,
            "output": e2e.run_checked([str(plain)], timeout=60)}


def link(clang, lld, plugins, program, jobs: int, tag: str, extra_env=None) -> tuple:
    """One ThinLTO link with both plugins in the backends; returns the
    executable's bytes and the phase-ordering log."""
    out: Path = program["dir"]
    exe = out / f"{tag}.exe"
    log = out / f"{tag}.po.jsonl"
    log.unlink(missing_ok=True)
    env = dict(os.environ, MLBRIDGE_PO_ENABLE="1", MLBRIDGE_PO_START=PO_START,
               MLBRIDGE_PO_LOG=str(log))
    for var in ("MLBRIDGE_PO_RUNNER", "MLBRIDGE_INLINE_RUNNER", "MLBRIDGE_PO_MODEL",
                "MLBRIDGE_INLINE_MODEL", "MLBRIDGE_PO_SIZE"):
        env.pop(var, None)
    env.update(extra_env or {})
    cmd = [clang, "-Oz", "-flto=thin", f"--ld-path={lld}",
           f"-Wl,--thinlto-jobs={jobs}",
           f"-Wl,--load-pass-plugin={plugins.inline_advisor}",
           f"-Wl,--load-pass-plugin={plugins.phase_order}",
           *map(str, program["objects"]), "-o", str(exe)]
    env = toolchain.plugin_env(cmd, env)
    res = subprocess.run(cmd, env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=300)
    assert res.returncode == 0, \
        f"link failed ({res.returncode}): {' '.join(cmd)}\n{res.stderr.decode()[-3000:]}"
    assert b"warning" not in res.stderr, res.stderr.decode()[-3000:]
    lines = [json.loads(l) for l in log.read_text().splitlines() if l.strip()]
    return exe.read_bytes(), lines


def check_links(clang, lld, plugins, program, e2e, extra_env=None):
    """Links with 2 and 8 backend threads, REPEATS times each, against the
    one-thread link: same executable, same episodes, plain -Oz's output."""
    reference, ref_log = link(clang, lld, plugins, program, 1, "jobs1", extra_env)
    assert len(ref_log) == UNITS, ref_log
    assert all(e["asked"] >= 1 and not e["error"] for e in ref_log), ref_log
    assert e2e.run_checked([str(program["dir"] / "jobs1.exe")], timeout=60) == program["output"]
    episodes = lambda log: sorted((e["module"], e["actions"], e["code_size"]) for e in log)
    differing = []
    for jobs in (2, 8):
        for r in range(REPEATS):
            tag = f"jobs{jobs}-{r}"
            binary, entries = link(clang, lld, plugins, program, jobs, tag, extra_env)
            if binary != reference or episodes(entries) != episodes(ref_log):
                differing.append(f"--thinlto-jobs={jobs} run {r}")
            exe = program["dir"] / f"{tag}.exe"
            assert e2e.run_checked([str(exe)], timeout=60) == program["output"]
    assert not differing, f"links that differ from --thinlto-jobs=1: {differing}"
    return ref_log


def test_shipped_policies_under_thinlto_threads_give_the_one_thread_binary(
        clang, lld, plugins, program, e2e):
    """The deployment: the compiled-in models of both plugins."""
    require_component("compiled_model")
    assert plugins.has_runner("compiled")
    log = check_links(clang, lld, plugins, program, e2e)
    assert {e["runner"] for e in log} == {"compiled"}


def split_model(path: Path, below_functions: int):
    """An ONNX agent that switches the machine outliner off (action 20) in
    modules with fewer than ``below_functions`` functions and stops
    elsewhere: modules of one link that decide differently."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    w = np.zeros((27, 22), np.float32)
    b = np.zeros((1, 22), np.float32)
    w[0, 20] = -1.0                      # functions
    b[0, 20] = below_functions - 0.5
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["observation", "w"], ["xw"]),
         helper.make_node("Add", ["xw", "b"], ["scores"])],
        "split", [helper.make_tensor_value_info("observation", TensorProto.FLOAT, [1, 27])],
        [helper.make_tensor_value_info("scores", TensorProto.FLOAT, [1, 22])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))


def test_per_module_outliner_decisions_under_thinlto_threads(clang, lld, plugins, program,
                                                            e2e):
    """Modules of one link turning the machine outliner off and leaving it
    on, each episode measuring .text (code generation of copies while other
    threads decide): every module's code and sizes are its own."""
    require_component("onnx")
    assert plugins.has_runner("onnx")
    model = program["dir"] / "split.onnx"
    split_model(model, below_functions=3)
    log = check_links(clang, lld, plugins, program, e2e,
                      {"MLBRIDGE_PO_MODEL": str(model), "MLBRIDGE_PO_SIZE": "text"})
    actions = {e["module"]: e["actions"] for e in log}
    off = [m for m, a in actions.items() if a and a[0] == 20]
    assert off and len(off) < len(actions), actions


# ---- a model in another process (pipe, gRPC) under backend threads -----------

#: Units of the program the inliner is asked about in every backend module:
#: each calls the next unit's helper, which ThinLTO imports.
ASKING_UNITS = 8


def asking_sources() -> dict:
    files = {}
    for i in range(ASKING_UNITS):
        j = (i + 1) % ASKING_UNITS
        files[f"v{i}.c"] = f"""
int u{j}_helper(const int *a, int n);
int u{i}_helper(const int *a, int n) {{
  int s = {i};
  for (int k = 0; k < n; ++k) s = s * 31 + (a[k] ^ {i});
  return s;
}}
int unit{i}(const int *a, int n) {{
  return u{i}_helper(a, n) + u{j}_helper(a, n / 2) + u{j}_helper(a + 1, n / 3);
}}
"""
    decls = "".join(f"int unit{i}(const int *a, int n);\n" for i in range(ASKING_UNITS))
    calls = "".join(f"  s += unit{i}(a, 64);\n" for i in range(ASKING_UNITS))
    files["vmain.c"] = f"""#include <stdio.h>
{decls}int main(void) {{
  int a[64];
  long s = 0;
  for (int i = 0; i < 64; ++i) a[i] = i * 7 % 13;
{calls}  printf("%ld\\n", s);
  return 0;
}}
"""
    return files


def call_site_policy(obs) -> int:
    """Inline or not by the call site's own features: a module given
    another's answers would build other code."""
    return int((int(obs["callsite_height"][0]) + int(obs["callee_users"][0])) % 2 == 0)


@pytest.mark.parametrize("transport", ["grpc", "pipe"])
def test_model_process_under_thinlto_threads(clang, lld, plugins, tmp_path, e2e, transport):
    """The inliner's model served from Python while 8 backend threads ask
    for it. gRPC: every module has its own session, so every decision is
    the model's and the link is the one-thread link. A FIFO pair serves one
    session: the modules that find it taken are refused (the warning says
    so) and take LLVM's decisions; every answer served reaches the module
    that asked. The program prints what plain -Oz's build prints."""
    import threading
    from mlbridge.toolchain import ModelServer
    if transport == "grpc":
        require_component("grpc")
    assert plugins.has_runner(transport)
    sources = []
    for name, text in asking_sources().items():
        (tmp_path / name).write_text(text)
        sources.append(tmp_path / name)
    plain = tmp_path / "plain.exe"
    e2e.run_checked([clang, "-Oz", *map(str, sources), "-o", str(plain)])
    expected = e2e.run_checked([str(plain)], timeout=60)
    objects = []
    for src in sources:
        objects.append(src.with_suffix(".o"))
        e2e.run_checked([clang, "-Oz", "-flto=thin", "-c", str(src), "-o", str(objects[-1])])

    def link(jobs: int):
        served = []
        lock = threading.Lock()

        def policy(obs):
            with lock:
                served.append(1)
            return call_site_policy(obs)
        exe = tmp_path / f"{transport}-{jobs}.exe"
        log = tmp_path / f"{transport}-{jobs}.jsonl"
        with ModelServer(policy, transport=transport, timeout=60) as server:
            env = {k: v for k, v in os.environ.items() if not k.startswith("MLBRIDGE_")}
            env["MLBRIDGE_INLINE_CHANNEL" if transport == "pipe"
                else "MLBRIDGE_INLINE_SERVER"] = server.endpoint
            env.update(MLBRIDGE_INLINE_TIMEOUT_MS="10000", MLBRIDGE_INLINE_LOG=str(log))
            cmd = [clang, "-Oz", "-flto=thin", f"--ld-path={lld}", f"-Wl,--thinlto-jobs={jobs}",
                   f"-Wl,--load-pass-plugin={plugins.inline_advisor}", *map(str, objects),
                   "-o", str(exe)]
            res = subprocess.run(cmd, env=toolchain.plugin_env(cmd, env),
                                 stdin=subprocess.DEVNULL, capture_output=True, timeout=300)
        # (leaving the with block raised the server's first protocol error, if any)
        assert res.returncode == 0, res.stderr.decode()[-3000:]
        assert e2e.run_checked([str(exe)], timeout=60) == expected
        rows = [json.loads(l) for l in log.read_text().splitlines() if l.strip()]
        model = sum(r["model_decisions"] for r in rows)
        assert len(served) == model, (len(served), rows)
        for r in rows:
            assert r["model_decisions"] + r["fallbacks"] == r["asked"], r
        return exe.read_bytes(), rows, res.stderr.decode()

    one, rows, err = link(1)
    assert "warning" not in err, err
    assert sum(r["asked"] for r in rows) >= ASKING_UNITS, rows
    assert all(r["fallbacks"] == 0 for r in rows), rows
    many, rows8, err8 = link(8)
    if transport == "grpc":
        assert "warning" not in err8, err8
        assert all(r["fallbacks"] == 0 for r in rows8), rows8
        assert many == one, "8 backend threads built other code than one"
    else:
        warnings = [l for l in err8.splitlines() if "warning" in l]
        assert all("in use by another compiler session" in w for w in warnings), warnings
        # A module refused when its advisor was made writes no log line.
        fell_back = len(rows8) < len(rows) or any(r["fallbacks"] for r in rows8)
        assert fell_back == bool(warnings), (warnings, rows8)
