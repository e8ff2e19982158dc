"""Real projects built with a plugin through their own build systems
(mlbridge.builds): Debian's zlib (its own configure and Makefile) with both
size plugins, on each LLVM version, and Debian's libyaml (autotools) with
the register allocator, on LLVM 19.

Each is built twice, plain and with the plugin, from the verified source
tarball: both builds succeed, the project's own tests all pass, the
generated config header is byte for byte the plain build's (a plugin in
CFLAGS must not change what configure detects), every linked output is
measured with a sane ``.text``, and the plugin changed the code (it was
loaded and decided). The sources come from ``apt-get source`` (cached;
scripts/install-deps.sh adds the deb-src entry).
"""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def builds(mlbridge_pkg):
    import mlbridge.builds
    return mlbridge.builds


def _build(builds, name, config, llvm, workdir):
    project = builds.by_name(name)
    return project, builds.build_project(project, builds.config_by_name(config),
                                         builds.compilers(llvm), workdir)


def _check_pair(builds, name, plain_cfg, plugin_cfg, llvm, tmp_path):
    project, plain = _build(builds, name, plain_cfg, llvm, tmp_path / "plain")
    _, plugged = _build(builds, name, plugin_cfg, llvm, tmp_path / "plugin")
    for rec in (plain, plugged):
        assert rec["ok"], f"{rec['config']}: {rec['failed_step']} failed:\n{rec['error']}"
        assert rec["tests_total"] > 0, f"{rec['config']}: no test ran:\n{rec['error']}"
        assert rec["tests_passed"] == rec["tests_total"], \
            f"{rec['config']}: {rec['tests_failed']} failed:\n{rec['error']}"
        assert rec["headers"] and all(rec["headers"].values()), rec["headers"]
        assert not rec["outputs_missing"], rec["outputs_missing"]
    assert plugged["headers"] == plain["headers"], "configure detected other features"
    # the same linked outputs, each with code, the total within reason
    assert set(plugged["texts"]) == set(plain["texts"]) and plain["texts"]
    assert all(size > 0 for size in plugged["texts"].values()), plugged["texts"]
    assert plain["text_total"] > 10_000, plain["texts"]
    assert 0.7 * plain["text_total"] < plugged["text_total"] < 1.3 * plain["text_total"]
    # the plugin was loaded and changed decisions somewhere in the project
    assert plugged["texts"] != plain["texts"], "the plugin made no difference"
    assert plugged["cpu"] > 0 and plugged["max_rss_kib"] > 0
    return plain, plugged


def test_zlib_with_the_size_plugins(builds, plugins_any_llvm, llvm_major, tmp_path):
    plain, size = _check_pair(builds, "zlib", "Oz", "size", llvm_major, tmp_path)
    assert f"-fpass-plugin={plugins_any_llvm.phase_order}" in size["flags"]["CFLAGS"]


def test_libyaml_with_the_register_allocator(builds, plugins, tmp_path):
    if plugins.regalloc is None:
        pytest.skip(f"{plugins.source} lists no regalloc plugin for LLVM 19")
    plain, ra = _check_pair(builds, "libyaml", "O2", "regalloc", 19, tmp_path)
    assert ra["settings"] == {"MLBRIDGE_RA_ENABLE": "1"}


def test_sources_are_verified_before_use(builds, tmp_path):
    """A cached file that differs from its pin is fetched again; a download
    that differs from its pin is refused and removed."""
    import dataclasses
    project = builds.by_name("zlib")
    folder = builds.fetch(project, cache=tmp_path)
    orig = folder / project.orig
    orig.write_bytes(b"not the tarball")
    assert builds.fetch(project, cache=tmp_path) == folder
    assert orig.stat().st_size > 100_000  # fetched again and verified
    wrong = dataclasses.replace(project, files={**project.files, project.orig: "0" * 64})
    with pytest.raises(builds.SourceMismatch, match=f"changed: {project.orig}"):
        builds.fetch(wrong, cache=tmp_path)
    assert not orig.exists()


def test_test_counts_are_read_from_each_harness(mlbridge_pkg):
    from mlbridge.builds.measure import count_tests
    automake = ("# TOTAL: 3\n# PASS:  2\n# SKIP:  1\n# XFAIL: 0\n# FAIL:  0\n"
                "...\n# TOTAL: 4\n# PASS:  2\n# SKIP:  0\n# XFAIL: 1\n# FAIL:  1\n")
    assert count_tests("automake", automake) == (5, 6)
    assert count_tests("ctest", "96% tests passed, 1 tests failed out of 23\n") == (22, 23)
    assert count_tests("ctest", "no summary: ctest did not run") == (0, 0)
    assert count_tests("commands", "", [True, False, True]) == (2, 3)
