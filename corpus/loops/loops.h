/* Shared declarations of the loop kernels (corpus/loops, docs/loop-kernels.md).
 *
 * Every kernel is `void <family>_<name>(void)` with external linkage and
 * works on the global arrays below, which driver.c defines and initialises.
 * Kernels and driver are separate translation units, so the compiler sees
 * one kernel at a time and learns nothing from the driver's data.
 *
 * DIST goes on its own line before every innermost loop: empty normally,
 * `#pragma clang loop distribute(enable)` when compiled with
 * -DMLB_FORCE_DISTRIBUTE (the forced-metadata baseline). */
#ifndef MLB_LOOPS_H
#define MLB_LOOPS_H

#define LEN 1024  /* 1-D arrays */
#define LEN2 48   /* 2-D arrays: LEN2 x LEN2 */

#ifdef MLB_FORCE_DISTRIBUTE
#define DIST _Pragma("clang loop distribute(enable)")
#else
#define DIST
#endif

/* Inputs and outputs: every array is checksummed after the run. */
extern float a[LEN], b[LEN], c[LEN], d[LEN], e[LEN], f[LEN];
extern float aa[LEN2][LEN2], bb[LEN2][LEN2], cc[LEN2][LEN2];
/* ip: a permutation of 0..LEN-1; ic: values in 0..LEN2-1. */
extern int ip[LEN], ic[LEN];
extern int ia[LEN], ib[LEN];
/* Scalar results (reductions, searches). */
extern float res[4];
extern int ires[4];

#endif
