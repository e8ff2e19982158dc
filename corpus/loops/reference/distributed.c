/* Hand-distributed versions of four training kernels, under the same names:
 * their statements split into loops that run one after the other, each
 * dependence pointing from an earlier loop to a later one, so each prints
 * the checksums of its original.
 * They show what a partition can gain where LLVM's own distribution declines
 * (docs/loop-kernels.md, "Headroom"); their partitions are given with each. */
#include "loops.h"

/* mixed_rec_map, partition {a} | {c}. */
void mixed_rec_map(void) {
  for (int i = 1; i < LEN; i++) {
    a[i] = a[i - 1] + b[i];
  }
  for (int i = 1; i < LEN; i++) {
    c[i] = d[i] * e[i];
  }
}

/* mixed_three_stage, partition {a} | {c} | {d}. */
void mixed_three_stage(void) {
  for (int i = 1; i < LEN; i++) {
    a[i] = b[i] * 2.0f;
  }
  for (int i = 1; i < LEN; i++) {
    c[i] = c[i - 1] * 0.5f + a[i];
  }
  for (int i = 1; i < LEN; i++) {
    d[i] = c[i] + e[i];
  }
}

/* mixed_long_body, partition {a, d, f} | {e}. */
void mixed_long_body(void) {
  for (int i = 1; i < LEN; i++) {
    a[i] = b[i] + c[i];
    d[i] = b[i] - c[i];
    f[i] = a[i] * d[i];
  }
  for (int i = 1; i < LEN; i++) {
    e[i] = e[i - 1] * 0.5f + a[i];
  }
}

/* recurrence_plus_map, partition {a} | {c}. */
void recurrence_plus_map(void) {
  for (int i = 1; i < LEN; i++) {
    a[i] = a[i - 1] * 0.5f + b[i];
  }
  for (int i = 1; i < LEN; i++) {
    c[i] = d[i] * e[i] + 1.0f;
  }
}
