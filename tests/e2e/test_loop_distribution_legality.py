"""Loop distribution never changes what a program computes: kernels whose
dependences DependenceAnalysis and LLVM's DDG get wrong or leave incomplete
(issue 34, items 1 and 2), built with ``-O2`` and MLBridgeLoopDistribution.so
under every policy, print what plain ``-O0`` prints, on LLVM 19 and 22.

* ``zero_stride``: ``A[s*i]`` with ``s = 0``. DependenceAnalysis assumes a
  symbolic coefficient is non-zero (``anti [0|<]``), so it misses the store
  of one iteration feeding the load of the next.
* ``any_direction``: ``b[-i] = 7; c[i] = b[i+k] + 7`` with ``k = -2``: the
  dependence is ``[*|<]``; the DDG keeps only its forward edge, which let
  every store move before every load.
* ``fuzz_seed139``: found by the generated-kernel fuzzer
  (mlbridge.difftest.loop_kernels, seed 139 of its first version), reduced
  by hand: a zero stride and a symbolic offset together; the forced split
  into three loops was accepted.

Each runs with the plugin loaded with no option (the shipped model), the
built-in policy, and the bad partition forced (``-mlbridge-ld-partition``),
which the plugin must refuse with a warning.
"""

from __future__ import annotations

import pytest
from conftest import plugins_of_each_llvm

from mlbridge.difftest.loop_kernels import build_and_run
from mlbridge.llvm.plugins import loop_distribution as ld

CASES = {
    "zero_stride": r"""
#include <stdio.h>
#define N 16
int A[N * 2], B[N];
unsigned C[N + 1];
__attribute__((noinline)) void kern(long s, int n) {
  for (int i = 0; i < n; i++) {
    C[i + 1] = C[i] * 3 + A[s * i];
    A[s * i] = B[i] + 1;
  }
}
volatile long vs = 0;
int main(void) {
  for (int i = 0; i < N; i++) { B[i] = i * 7 + 1; A[i] = i + 100; A[i + N] = -i; }
  C[0] = 1;
  kern(vs, N);
  for (int i = 0; i <= N; i++) printf("%u ", C[i]);
  printf("| %d %d\n", A[0], A[1]);
  return 0;
}
""",
    "any_direction": r"""
#include <stdio.h>
#define N 16
int store_[3 * N], c[N];
__attribute__((noinline)) void kern(int *b, long k, int n) {
  for (int i = 0; i < n; i++) {
    b[-i] = 7;
    c[i] = b[i + k] + 7;
  }
}
volatile long vk = -2;
int main(void) {
  for (int i = 0; i < 3 * N; i++) store_[i] = 98 + i;
  kern(store_ + N + 4, vk, 8);
  for (int i = 0; i < 8; i++) printf("%d ", c[i]);
  printf("\n");
  return 0;
}
""",
    "fuzz_seed139": r"""
#include <stdio.h>
unsigned pool[64], c[16];
__attribute__((noinline)) void kern(unsigned *p, long s, long k, long n) {
  for (long i = 0; i < n; i++) {
    p[-s * i] = 6u;
    c[i] = p[i];
    p[i - k] = 9u;
  }
}
volatile long vs = 0, vk = -2;
int main(void) {
  for (int i = 0; i < 64; i++) pool[i] = i * 3u + 1u;
  kern(pool + 20, vs, vk, 8);
  for (int i = 0; i < 8; i++) printf("%u ", c[i]);
  printf("| %u %u\n", pool[20], pool[22]);
  return 0;
}
""",
}
#: The wrong order of each: statements split in program order.
BAD_PARTITION = {"zero_stride": "kern:0=0|1", "any_direction": "kern:0=0|1",
                 "fuzz_seed139": "kern:0=0|1|2"}
POLICIES = {"shipped": {}, "builtin": {"runner": "default"}, "forced": None}


plugins = plugins_of_each_llvm()


@pytest.fixture(scope="module")
def reference(clang, tmp_path_factory):
    work = tmp_path_factory.mktemp("ref")
    out = {}
    for name, text in CASES.items():
        src = work / f"{name}.c"
        src.write_text(text)
        got = build_and_run(src, clang, ["-O0"], work / name)
        assert got.output is not None, got.failure
        out[name] = got.output
    return out


@pytest.mark.parametrize("policy", sorted(POLICIES))
@pytest.mark.parametrize("case", sorted(CASES))
def test_kernel_output_equals_plain(plugins, clang, reference, tmp_path, case, policy):
    src = tmp_path / f"{case}.c"
    src.write_text(CASES[case])
    settings = {"partition": BAD_PARTITION[case]} if policy == "forced" else POLICIES[policy]
    got = build_and_run(src, clang, ["-O2"], tmp_path / case, plugin=ld.plugin(plugins),
                        settings=ld.plugin_settings(**settings))
    assert got.output is not None, got.failure
    kern = [r for r in got.loops if r["function"] == "kern"]
    assert kern, "the plugin saw no loop in kern"
    assert got.output == reference[case], (
        f"{case} with the {policy} policy prints {got.output!r}, plain -O0 "
        f"{reference[case]!r}; the plugin's log: {kern}")
    if policy == "forced":
        # The statements depend on each other both ways: one node, so the
        # partition names a node that does not exist; refused loudly.
        assert kern[0]["result"] == "invalid", kern
        assert "warning: mlbridge-loop-distribution" in got.stderr, got.stderr
