"""Differential tests of every shipped plugin and policy, the fast version
of the campaign (python/mlbridge/difftest, tests/differential/README.md), on
every LLVM version the build has plugins for.

With fixed seeds: csmith programs and the project's own programs
(tests/e2e/programs) built with each configuration must print what their
-O0 build prints; llvm-stress modules through opt (-verify-each) or llc
(-verify-machineinstrs) must compile; generated loop kernels
(mlbridge.difftest.loop_kernels: zero, symbolic and negative strides and
offsets, aliasing) must print their -O0 output; a program of csmith units and
one of units full of distributable loops, linked with ThinLTO and the plugins
in lld's backends, must link with 1, 2 and 8 threads into identical binaries
printing the -O0 output; every kept case
(tests/differential/cases) must build right in every configuration.
One test per check, configuration and LLVM version; its failure message
lists each failing input with the command that reproduces it.

Under an ASan+UBSan build of the plugins the counts are smaller (the
compilers are several times slower there).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CASES = REPO / "tests" / "differential" / "cases"

#: The fast campaign's fixed inputs, unsanitized and sanitized builds.
FAST = {"csmith": range(1, 3), "stress": range(1, 5), "thinlto": [(1, 2, 3, 4)],
        "kernels": range(0, 4), "kernel_units": 6}
SANITIZED = {"csmith": range(1, 2), "stress": range(1, 4), "thinlto": [(1, 2)],
             "kernels": range(0, 3), "kernel_units": 4}

#: Failures the fast campaign shows on main, each awaiting the fix of the
#: issue item named: (check, configuration) -> why, marked xfail(strict):
#: once the fix lands the test XPASSes, fails, and the mark is removed.
#: Empty since issue 34's fixes (items 1-3, 5, 6, 7, 9, 10) landed; before
#: them: stress and programs ra-model (item 5), thinlto po/po-start/size
#: (item 9), thinlto ra-* (items 7, 10), kernels and lto-kernels ld-*
#: (items 1-3, 6).
KNOWN = {}

#: A kept case's own known failures (its JSON's "known": configuration -> why).
for _meta in CASES.glob("*.json"):
    for _c, _why in json.loads(_meta.read_text()).get("known", {}).items():
        KNOWN[("case", _c)] = f"{_meta.stem}: {_why}"

CHECKS = ("csmith", "programs", "kernels", "stress", "thinlto") + (
    ("case",) if any(CASES.glob("*.c")) else ())


def _params():
    from mlbridge.difftest.configs import CONFIGS
    for check in CHECKS:
        for c in CONFIGS:
            if check != "thinlto" or "lld" in c.hosts():
                yield pytest.param(check, c.name, id=f"{check}-{c.name}")


@pytest.fixture(scope="module")
def results(plugins_any_llvm, llvm_major, tmp_path_factory):
    """Every check of the fast campaign on this LLVM version (two inputs at
    a time)."""
    from mlbridge.difftest import campaign, configs
    counts = SANITIZED if plugins_any_llvm.sanitize else FAST
    plan = campaign.Plan(configs=list(configs.CONFIGS), toolsets=[configs.toolset(llvm_major)],
                         csmith=counts["csmith"], stress=counts["stress"],
                         thinlto=counts["thinlto"], programs=True, kernels=counts["kernels"],
                         kernel_units=counts["kernel_units"], cases="case" in CHECKS,
                         jobs=2)
    return campaign.run_campaign(plan, workdir=tmp_path_factory.mktemp("difftest"))


def test_inputs_were_checked(results):
    """No input broke the harness, and the csmith programs were not all
    discarded (an -O0 build that fails or runs too long)."""
    broken = [r for r in results if r.check == "harness"]
    assert not broken, "\n".join(r.detail for r in broken)
    used = {r.case for r in results if r.check == "csmith" and r.status != "discarded"}
    assert used, "every csmith program of the fast campaign was discarded"


@pytest.mark.parametrize("check,config", list(_params()))
def test_differential(results, check, config, request):
    known = KNOWN.get((check, config))
    if known:
        request.applymarker(pytest.mark.xfail(strict=True, reason=known))
    mine = [r for r in results if r.check == check and r.config == config]
    assert mine, f"no {check} result for {config}"
    bad = [r for r in mine if r.failed]
    assert not bad, f"{len(bad)} of {len(mine)} failed:\n" + "\n".join(
        f"{r.status}: {r.case}: {' '.join(r.detail.split())[:300]}"
        f"{' (LLVM alone too)' if r.stock_fails else ''}\n  reproduce: {r.command}"
        f"{chr(10) + '  input: ' + r.origin if r.origin else ''}" for r in bad)
