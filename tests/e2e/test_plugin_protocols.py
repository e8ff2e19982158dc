"""Each plugin prints its protocol (-describe) and it is what the Python side
uses: both come from the problem's .def file, the plugin through its C++
X-macros, Python through mlbridge.llvm.plugins._protocol. Runs on LLVM 19
and on LLVM 22 where the build has it."""

import json
import os
import subprocess

import pytest
from conftest import plugins_of_each_llvm

#: A loop the loop-distribution plugin looks at (it writes its description
#: on the first function with loops); the phase-ordering pass runs on it too.
KERNEL = ("void k(float *restrict a, float *restrict b, int n) {\n"
          "  for (int i = 1; i < n; i++) { a[i] = a[i - 1] + 1.0f; b[i] = b[i] * 2.0f; }\n"
          "}\n")

def clang_describing(plugin, level, env):
    """A command maker: clang at ``level`` on KERNEL with the plugin named
    ``plugin`` (a PluginInfo attribute), the description asked for by the
    environment variable ``env``."""
    def make(plugins, tmp_path, describe):
        src = tmp_path / "k.c"
        src.write_text(KERNEL)
        return ([plugins.tool("clang"), level, "-c", str(src), "-o", "-",
                 f"-fpass-plugin={getattr(plugins, plugin)}"],
                {env: str(describe)} if describe else {})
    return make


#: The inline advisor with no model (LLVM's decisions) at -O2; loop
#: distribution at -O3, where it looks at KERNEL's loop.
inliner = clang_describing("inline_advisor", "-O2", "MLBRIDGE_INLINE_DESCRIBE")
loop_distribution = clang_describing("loop_distribution", "-O3", "MLBRIDGE_LD_DESCRIBE")


def phase_order(plugins, tmp_path, describe):
    """opt running the pass with its built-in policy on a small module, the
    description asked for by option."""
    src = tmp_path / "k.c"
    src.write_text(KERNEL)
    ll = tmp_path / "k.ll"
    subprocess.run([plugins.tool("clang"), "-O0", "-Xclang", "-disable-O0-optnone", "-S",
                    "-emit-llvm", str(src), "-o", str(ll)], check=True, timeout=120)
    return ([plugins.tool("opt"), f"-load-pass-plugin={plugins.phase_order}",
             "-passes=mlbridge-phase-order", "-mlbridge-po-runner=default", str(ll), "-o", "-"]
            + ([f"-mlbridge-po-describe={describe}"] if describe else []), {})


def regalloc(plugins, tmp_path, describe):
    """llc with -regalloc=mlbridge (its built-in policy) on KERNEL's IR, the
    description asked for by option."""
    src = tmp_path / "k.c"
    src.write_text(KERNEL)
    ll = tmp_path / "k.ll"
    subprocess.run([plugins.tool("clang"), "-O2", "-S", "-emit-llvm", str(src), "-o", str(ll)],
                   check=True, timeout=120)
    return ([plugins.tool("llc"), "-O2", f"-load={plugins.regalloc}", "-regalloc=mlbridge",
             "-filetype=obj", str(ll), "-o", "-"]
            + ([f"-mlbridge-ra-describe={describe}"] if describe else []), {})


#: problem -> (command maker, Python module, its protocol's name there)
PROBLEMS = {
    "inliner": (inliner, "mlbridge.llvm.plugins.inliner", "PROTOCOL"),
    "loop_distribution": (loop_distribution, "mlbridge.llvm.plugins.loop_distribution",
                          "PROTOCOL"),
    "phase_order": (phase_order, "mlbridge.llvm.plugins._plugins", "PHASE_ORDER_PROTOCOL"),
    "regalloc": (regalloc, "mlbridge.llvm.plugins.regalloc", "PROTOCOL"),
}


plugins = plugins_of_each_llvm()


def run(cmd, env_extra):
    """Run ``cmd`` without our environment settings, with ``env_extra``;
    a sanitized build's plugins get their runtime preloaded (plugin_env)."""
    from mlbridge.toolchain.run import plugin_env
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLBRIDGE_")}
    env.update(env_extra)
    env = plugin_env(cmd, env)
    res = subprocess.run(cmd, env=env, capture_output=True, timeout=300)
    assert res.returncode == 0, res.stderr.decode(errors="replace")
    return res.stdout, res.stderr.decode(errors="replace")


@pytest.mark.parametrize("problem", sorted(PROBLEMS))
def test_plugin_describes_the_python_protocol(plugins, problem, tmp_path):
    import importlib
    make, module, attr = PROBLEMS[problem]
    path = tmp_path / "protocol.json"
    plain, _ = run(*make(plugins, tmp_path, None))
    described, stderr = run(*make(plugins, tmp_path, path))
    assert described == plain, "describing changed the compile"
    assert "warning" not in stderr, stderr
    printed = json.loads(path.read_text())
    protocol = getattr(importlib.import_module(module), attr)
    expected = protocol.description()
    assert {k: printed[k] for k in expected} == expected
    for f in printed["features"] + printed["optional_features"]:
        assert f["type"] in ("float", "int64_t") and all(d > 0 for d in f["shape"]), f


def test_python_mirrors_read_the_protocol():
    """What the modules export is the protocol they parsed."""
    from mlbridge.llvm.plugins import _plugins, loop_distribution as ld
    assert list(ld.FEATURES) == [f.name for f in ld.PROTOCOL.features]
    assert ld.FEATURES["node_features"][1] == (ld.MAX_NODES, len(ld.NODE_FEATURES))
    assert ld.ADVICE[0] == ld.PROTOCOL.advice.name
    po = _plugins.PHASE_ORDER_PROTOCOL
    assert _plugins.ACTIONS == tuple(po.lists["Action"]) and _plugins.ACTIONS[-1] == "stop"
    obs = next(f for f in po.features if f.name == "observation")
    assert obs.shape == (1, _plugins.NUM_OBSERVATIONS)
