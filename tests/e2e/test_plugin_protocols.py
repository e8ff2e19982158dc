"""Each plugin prints its protocol (-describe) and it is what the Python side
uses: both come from the problem's .def file, the plugin through its C++
X-macros, Python through mlbridge.llvm.plugins._protocol. Runs on LLVM 19
and on LLVM 22 where the build has it."""

import json
import os
import subprocess

import pytest

#: A loop the loop-distribution plugin looks at (it writes its description
#: on the first function with loops).
KERNEL = ("void k(float *restrict a, float *restrict b, int n) {\n"
          "  for (int i = 1; i < n; i++) { a[i] = a[i - 1] + 1.0f; b[i] = b[i] * 2.0f; }\n"
          "}\n")

#: problem -> (PluginInfo attribute, environment variable, Python module)
PROBLEMS = {
    "loop_distribution": ("loop_distribution", "MLBRIDGE_LD_DESCRIBE",
                          "mlbridge.llvm.plugins.loop_distribution"),
}


@pytest.fixture(scope="module")
def plugins(plugins_any_llvm):
    return plugins_any_llvm


def compile_kernel(plugins, plugin, tmp_path, name, env_extra):
    src = tmp_path / "k.c"
    src.write_text(KERNEL)
    obj = tmp_path / f"{name}.o"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLBRIDGE_")}
    env.update(env_extra)
    run = subprocess.run([plugins.tool("clang"), "-O3", "-c", str(src), "-o", str(obj),
                          f"-fpass-plugin={plugin}"], env=env, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    return obj.read_bytes(), run.stderr


@pytest.mark.parametrize("problem", sorted(PROBLEMS))
def test_plugin_describes_the_python_protocol(plugins, problem, tmp_path):
    import importlib
    attr, env_name, module = PROBLEMS[problem]
    plugin = getattr(plugins, attr)
    assert plugin is not None and plugin.is_file(), f"{problem}: plugin not built"
    path = tmp_path / "protocol.json"
    plain, _ = compile_kernel(plugins, plugin, tmp_path, "plain", {})
    described, stderr = compile_kernel(plugins, plugin, tmp_path, "described",
                                       {env_name: str(path)})
    assert described == plain, "describing changed the compile"
    assert "warning" not in stderr, stderr
    printed = json.loads(path.read_text())
    py = importlib.import_module(module)
    assert printed == py.PROTOCOL.description()
    # and what the module exports is that protocol
    assert list(py.FEATURES) == [f["name"] for f in printed["features"]]
    for f in printed["features"]:
        dtype, shape = py.FEATURES[f["name"]]
        assert (dtype.__name__, list(shape)) == (
            {"float": "float32", "int64_t": "int64"}[f["type"]], f["shape"])
