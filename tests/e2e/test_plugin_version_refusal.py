"""End to end: a plugin built for one LLVM refuses, cleanly, to load into the
other (include/mlbridge/llvm/PluginEntry.h, docs/llvm-versions.md).

Every MLBridge LLVM plugin (inline advisor, phase ordering, IR2Vec), the
LLVM 19 build into opt-22 and clang-22 and the LLVM 22 build into opt-19 and
clang-19: the tool exits with status 1 (no signal, no stack dump), stderr has
one message naming both versions and the plugin of the right version (which
exists), and LLVM's own refusal; stdout stays empty. The right pairing still
loads (the plugin tests cover what it does then).

The register allocator (MLBridgeRegAlloc.so) is no pass plugin: llc -load
and clang -fplugin run its static registrations and call no entry. In the
other LLVM's tool it registers nothing and says so with the same message;
-regalloc=mlbridge then fails as an unknown allocator (status 1, no crash),
and without it the tool compiles as if the plugin were not there.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from build_components import build_dir, require_component
from mlbridge import toolchain

require_component("llvm_plugins")
require_component("llvm_plugins_llvm22")

REPO = Path(__file__).resolve().parents[2]
PLUGINS = ("MLBridgeInlineAdvisor", "MLBridgePhaseOrder", "MLBridgeIR2Vec")
DIRS = {19: "llvm-plugins", 22: "llvm22-plugins"}
API = {19: 1, 22: 2}  # LLVM_PLUGIN_API_VERSION of each host


def _plugin(llvm, name):
    path = build_dir() / "lib" / DIRS[llvm] / f"{name}.so"
    assert path.is_file(), path
    return path


def _tool(llvm, name):
    return f"/usr/lib/llvm-{llvm}/bin/{name}"


@pytest.fixture(scope="module")
def module_bc(tmp_path_factory):
    bc = tmp_path_factory.mktemp("refusal") / "sort.bc"
    toolchain.compile(["clang-19", "-O0", "-Xclang", "-disable-O0-optnone", "-emit-llvm", "-c",
                       str(REPO / "tests/e2e/programs/sort.c"), "-o", str(bc)], timeout=120,
                      measure_text=False)
    return bc


def _check_refused(r, built, host, name):
    plugin = _plugin(built, name)
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert r.stdout == ""
    assert "Stack dump" not in r.stderr and "PLEASE submit" not in r.stderr, r.stderr
    right = _plugin(host, name)
    assert (f"error: {plugin} was built for LLVM {built} and cannot load into this LLVM "
            f"{host} tool; load {right} instead (the LLVM {host} build)") in r.stderr, r.stderr
    assert (f"Wrong API version on plugin '{plugin}'. Got version 0, supported version "
            f"is {API[host]}.") in r.stderr, r.stderr


@pytest.mark.parametrize("name", PLUGINS)
@pytest.mark.parametrize("built,host", [(19, 22), (22, 19)])
def test_opt_refuses_the_other_version(module_bc, name, built, host):
    r = toolchain.run_command([_tool(host, "opt"), f"-load-pass-plugin={_plugin(built, name)}",
                               "-passes=default<O1>", "-disable-output", str(module_bc)],
                               timeout=120)
    _check_refused(r, built, host, name)


@pytest.mark.parametrize("name", ["MLBridgeInlineAdvisor", "MLBridgePhaseOrder"])
@pytest.mark.parametrize("built,host", [(19, 22), (22, 19)])
def test_clang_refuses_the_other_version(tmp_path, name, built, host):
    r = toolchain.run_command([_tool(host, "clang"), "-O1", "-c",
                               str(REPO / "tests/e2e/programs/sort.c"), "-o",
                               str(tmp_path / "sort.o"), f"-fpass-plugin={_plugin(built, name)}"],
                               timeout=120)
    _check_refused(r, built, host, name)
    assert "unable to load plugin" in r.stderr
    assert not (tmp_path / "sort.o").exists()


@pytest.mark.parametrize("llvm", [19, 22])
def test_the_right_version_loads(module_bc, llvm):
    for name in PLUGINS:
        r = toolchain.run_command([_tool(llvm, "opt"),
                                   f"-load-pass-plugin={_plugin(llvm, name)}",
                                   "-passes=default<O1>", "-disable-output", str(module_bc)],
                                   timeout=120)
        assert r.returncode == 0, (name, r.stderr)
        assert "cannot load" not in r.stderr


# ---- the register allocator: llc -load, clang -fplugin ----------------------------

RA = "MLBridgeRegAlloc"


def _refusal(built, host):
    return (f"error: {_plugin(built, RA)} was built for LLVM {built} and cannot load into "
            f"this LLVM {host} tool; load {_plugin(host, RA)} instead (the LLVM {host} build)")


def _check_ra_refused(r, built, host):
    assert r.stdout == ""
    assert "Stack dump" not in r.stderr and "PLEASE submit" not in r.stderr, r.stderr
    # Once, although the allocator and the score pass both ask.
    assert r.stderr.count(_refusal(built, host)) == 1, r.stderr


SCORE_MIR = REPO / "tests/e2e/programs/regalloc/score_example.mir"


@pytest.mark.parametrize("built,host", [(19, 22), (22, 19)])
@pytest.mark.parametrize("use,unknown", [
    ("-regalloc=mlbridge", "for the --regalloc option: Cannot find option named 'mlbridge'!"),
    ("-run-pass=mlbridge-ra-score", "error: run-pass mlbridge-ra-score is not registered."),
], ids=["regalloc", "score-pass"])
def test_llc_refuses_the_other_register_allocator(module_bc, tmp_path, built, host, use,
                                                  unknown):
    out = tmp_path / "out"
    source = module_bc if use.startswith("-regalloc") else SCORE_MIR
    r = toolchain.run_command([_tool(host, "llc"), "-load", str(_plugin(built, RA)), use,
                               str(source), "-o", str(out)], timeout=120)
    _check_ra_refused(r, built, host)
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert unknown in r.stderr, r.stderr
    assert not out.exists()


@pytest.mark.parametrize("built,host", [(19, 22), (22, 19)])
def test_llc_refuses_the_other_mir2vec_pass(tmp_path, built, host):
    """MLBridgeMIR2Vec.so (llc -load, docs/ir2vec.md "MIR2Vec") likewise."""
    mir2vec = _plugin(built, "MLBridgeMIR2Vec")
    r = toolchain.run_command([_tool(host, "llc"), "-load", str(mir2vec),
                               "-run-pass=mlbridge-mir2vec", str(SCORE_MIR), "-o",
                               str(tmp_path / "out")], timeout=120)
    assert r.returncode == 1 and r.stdout == "", r.stderr
    assert "Stack dump" not in r.stderr
    plugin, right = _plugin(built, "MLBridgeMIR2Vec"), _plugin(host, "MLBridgeMIR2Vec")
    assert r.stderr.count(f"error: {plugin} was built for LLVM {built} and cannot load into this "
                          f"LLVM {host} tool; load {right} instead") == 1, r.stderr
    assert "error: run-pass mlbridge-mir2vec is not registered." in r.stderr


@pytest.mark.parametrize("built,host", [(19, 22), (22, 19)])
def test_llc_with_the_other_register_allocator_loaded_but_unused(module_bc, tmp_path, built,
                                                                 host):
    """Nothing of the plugin is registered: the same assembly as without it."""
    llc = _tool(host, "llc")
    r = toolchain.run_command([llc, "-load", str(_plugin(built, RA)), str(module_bc),
                               "-o", str(tmp_path / "with.s")], timeout=120)
    _check_ra_refused(r, built, host)
    assert r.returncode == 0, r.stderr
    toolchain.run_tool([llc, str(module_bc), "-o", str(tmp_path / "plain.s")], timeout=120)
    assert (tmp_path / "with.s").read_bytes() == (tmp_path / "plain.s").read_bytes()


@pytest.mark.parametrize("built,host", [(19, 22), (22, 19)])
def test_clang_refuses_the_other_register_allocator(tmp_path, built, host):
    out = tmp_path / "sort.o"
    r = toolchain.run_command([_tool(host, "clang"), "-O1", "-c",
                               str(REPO / "tests/e2e/programs/sort.c"), "-o", str(out),
                               f"-fplugin={_plugin(built, RA)}", "-mllvm", "-regalloc=mlbridge"],
                              timeout=120)
    _check_ra_refused(r, built, host)
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert "Cannot find option named 'mlbridge'" in r.stderr, r.stderr
    assert not out.exists()


@pytest.mark.parametrize("llvm", [19, 22])
def test_the_right_register_allocator_loads(module_bc, tmp_path, llvm):
    log = tmp_path / "ra.jsonl"
    r = toolchain.run_command([_tool(llvm, "llc"), "-load", str(_plugin(llvm, RA)),
                               "-regalloc=mlbridge", f"-mlbridge-ra-log={log}", str(module_bc),
                               "-o", str(tmp_path / "sort.s")], timeout=120)
    assert r.returncode == 0, r.stderr
    assert "cannot load" not in r.stderr
    assert log.read_text().count('"integration":"mlbridge-regalloc"') > 0
