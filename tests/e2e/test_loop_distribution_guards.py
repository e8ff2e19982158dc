"""The loop-distribution plugin declines, whatever its model answers, the
two kinds of distribution found to lose on real code (docs/loop-distribution.md,
"What the plugin declines"), on LLVM 19 and 22:

* a partition none of whose loops can vectorize: each keeps a dependence
  cycle (node feature "cyclic") or does no memory work of its own (no
  stores, no loads another node does not compute too); it only adds loop
  overhead (xxHash's four-lane XXH32 loop,
  split in four by the shipped model, made ``lz4 -d`` 1.09x slower;
  lookup3's hash in jansson was split into a copy per state word);
* a loop whose accesses need more than 8 runtime pointer checks (LLVM's own
  budget for loop-vectorize): the checks run at every entry (zlib's match
  copies, with 12, made ``minigzip -d`` 1.31x slower).

A policy over pipes that puts every node in a loop of its own asks for
both; the plugin keeps the first loop whole and never asks about the
second, still distributes a loop that mixes a recurrence with maps, and the
program prints what -O0 prints. A partition forced with
``-mlbridge-ld-partition`` is applied as given (the checks are on model
decisions).
"""

from __future__ import annotations

import subprocess

import pytest
from conftest import plugins_of_each_llvm

from mlbridge.difftest.loop_kernels import build_and_run
from mlbridge.llvm.plugins import loop_distribution as ld

SOURCE = r"""
#include <stdio.h>
#define N 256
static unsigned mix(unsigned acc, unsigned word) {
  acc += word * 2654435761u;
  acc = (acc << 13) | (acc >> 19);
  return acc * 2246822519u;
}
/* Four independent lanes, each a recurrence. */
__attribute__((noinline)) unsigned lanes(const unsigned *p, unsigned n) {
  unsigned a = 1, b = 2, c = 3, d = 4;
  for (unsigned i = 0; i + 3 < n; i += 4) {
    a = mix(a, p[i]);
    b = mix(b, p[i + 1]);
    c = mix(c, p[i + 2]);
    d = mix(d, p[i + 3]);
  }
  return a ^ b ^ c ^ d;
}
/* Three stores and two loads through five pointers that may alias: nine
   runtime checks. */
__attribute__((noinline)) void many_checks(int *a, int *b, int *c, const int *d,
                                           const int *e, int n) {
  int s = 1;
  for (int i = 0; i < n; i++) {
    s = s * 3 + e[i];
    a[i] = s;
    b[i] = d[i] * 2;
    c[i] = d[i] + e[i];
  }
}
/* One hash state in three words (lookup3's shape): each word used after
   the loop is a node that recomputes the whole state, and the pointer's
   final value is a node that does no memory work. */
__attribute__((noinline)) unsigned coupled(const unsigned *k, unsigned length,
                                           const unsigned **end) {
  unsigned a = 1, b = 2, c = 3;
  while (length > 3) {
    a += k[0]; b += k[1]; c += k[2];
    a -= c; a ^= (c << 4) | (c >> 28); c += b;
    b -= a; b ^= (a << 6) | (a >> 26); a += c;
    length -= 3; k += 3;
  }
  *end = k;
  return a ^ (b * 3) ^ (c * 7);
}
/* A byte copy between pointers that may overlap: behind its runtime
   check it is still split from the pointer's final value. (zlib's copies,
   whose node stays cyclic with unknown distances, are not reproduced
   here: in this one the check's scopes resolve the dependence.) */
__attribute__((noinline)) unsigned char *copy(unsigned char *out,
                                              const unsigned char *from, unsigned len) {
  do {
    *out++ = *from++;
  } while (--len);
  return out;
}
/* A recurrence and a map over arrays that cannot alias. */
int x[N], y[N], z[N];
__attribute__((noinline)) void mixed(int n) {
  int s = 0;
  for (int i = 0; i < n; i++) {
    s = s * 5 + x[i];
    y[i] = s;
    z[i] = x[i] * 3 + 1;
  }
}
unsigned words[N];
int pool[6 * N];
int main(void) {
  for (int i = 0; i < N; i++) { words[i] = i * 2654435761u; x[i] = i - 7; }
  for (int i = 0; i < 6 * N; i++) pool[i] = i * 13 - 5;
  unsigned h = lanes(words, N);
  const unsigned *end;
  h ^= coupled(words, N, &end) + (unsigned)(end - words);
  many_checks(pool, pool + N, pool + 2 * N, pool + 3 * N, pool + 4 * N, N);
  many_checks(pool + 1, pool + 3, pool + 5, pool, pool + 2, N); /* overlapping */
  mixed(N);
  unsigned char bytes[2 * N];
  for (int i = 0; i < 2 * N; i++) bytes[i] = (unsigned char)(i * 7);
  h += (unsigned)(copy(bytes + N, bytes + 3, N - 5) - bytes);
  for (int i = 0; i < 2 * N; i++) h = h * 31 + bytes[i];
  for (int i = 0; i < 6 * N; i++) h = h * 31 + (unsigned)pool[i];
  for (int i = 0; i < N; i++) h = h * 31 + (unsigned)(y[i] ^ z[i]);
  printf("%u\n", h);
  return 0;
}
"""

plugins = plugins_of_each_llvm()


def every_node_alone(obs: ld.Observation) -> int:
    """Every node in a loop of its own, in the first legal order."""
    if obs.agent == ld.MERGE:
        return ld.START_NEW_LOOP if ld.START_NEW_LOOP in obs.legal else obs.legal[0]
    return obs.legal[0]


@pytest.fixture
def source(tmp_path):
    src = tmp_path / "guards.c"
    src.write_text(SOURCE)
    return src


@pytest.fixture
def expected(clang, source, tmp_path):
    got = build_and_run(source, clang, ["-O0"], tmp_path / "o0")
    assert got.output is not None, got.failure
    return got.output


def test_model_decisions_that_cannot_pay_are_declined(plugins, clang, source, expected,
                                                      tmp_path):
    exe = tmp_path / "guards"
    run = ld.compile_with_policy([clang, "-O2", f"-fpass-plugin={ld.plugin(plugins)}",
                                  str(source), "-o", str(exe)], every_node_alone,
                                 plugins=plugins)
    rows = {r["function"]: r for r in run.loops}
    lanes = rows["lanes"]
    assert lanes["nodes"] == 4 and lanes["partition"].count("|") == 3, lanes
    assert lanes["result"] == "unchanged", lanes
    assert lanes["reason"].startswith("no loop of the partition can vectorize"), lanes
    coupled = rows["coupled"]
    assert coupled["nodes"] >= 3 and coupled["result"] == "unchanged", coupled
    assert coupled["reason"] == lanes["reason"]
    checks = rows["many_checks"]
    assert checks["result"] == "declined", checks
    assert checks["reason"] == "more than 8 runtime pointer checks"
    assert checks["asked"] == 0
    assert rows["mixed"]["result"] == "distributed", rows["mixed"]
    assert rows["copy"]["result"] == "distributed", rows["copy"]
    assert rows["copy"]["runtime_checks"] >= 1, rows["copy"]
    assert subprocess.run([str(exe)], capture_output=True, text=True,
                          timeout=60).stdout == expected


def test_forced_partitions_are_applied_as_given(plugins, clang, source, expected, tmp_path):
    got = build_and_run(source, clang, ["-O2"], tmp_path / "forced", plugin=ld.plugin(plugins),
                        settings=ld.plugin_settings(partition="lanes:0=0|1|2|3"))
    assert got.output == expected, got.failure
    rows = {r["function"]: r for r in got.loops}
    assert rows["lanes"]["result"] == "distributed", rows["lanes"]
