/* alias: loops over pointer arguments that may alias, so vectorizing or
 * distributing them needs runtime overlap checks. Each kernel calls its
 * body (external, never inlined, so nothing is known about the pointers)
 * once with disjoint arrays and once with overlapping ones. */
#include "loops.h"

#define BODY __attribute__((noinline))

BODY void alias_copy_add_body(float *x, const float *y, const float *z, int n) {
  DIST
  for (int i = 0; i < n; i++) {
    x[i] = y[i] + z[i];
  }
}

void alias_copy_add(void) {
  alias_copy_add_body(a, b, c, LEN);
  alias_copy_add_body(d + 1, d, e, LEN - 1);
}

BODY void alias_two_stmt_body(float *x, float *y, const float *z, int n) {
  DIST
  for (int i = 0; i < n; i++) {
    x[i] = z[i] * 2.0f;
    y[i] = x[i] + z[i];
  }
}

void alias_two_stmt(void) {
  alias_two_stmt_body(a, b, c, LEN);
  alias_two_stmt_body(d, d + 3, e, LEN - 3);
}

BODY void alias_rec_map_body(float *x, float *y, const float *z, int n) {
  DIST
  for (int i = 1; i < n; i++) {
    x[i] = x[i - 1] * 0.5f + z[i];
    y[i] = z[i] * z[i];
  }
}

void alias_rec_map(void) {
  alias_rec_map_body(a, b, c, LEN);
  alias_rec_map_body(e, e + 2, d, LEN - 2);
}

BODY void alias_saxpy_body(float *y, const float *x, float s, int n) {
  DIST
  for (int i = 0; i < n; i++) {
    y[i] = y[i] + s * x[i];
  }
}

void alias_saxpy(void) {
  alias_saxpy_body(a, b, 0.5f, LEN);
  alias_saxpy_body(c + 1, c, 0.25f, LEN - 1);
}

BODY void alias_three_body(float *x, float *y, float *z, const float *w, int n) {
  DIST
  for (int i = 0; i < n; i++) {
    x[i] = w[i] + 1.0f;
    y[i] = w[i] * 0.5f;
    z[i] = x[i] + y[i];
  }
}

void alias_three(void) {
  alias_three_body(a, b, c, d, LEN);
  alias_three_body(e, e + 4, f, e + 1, LEN - 4);
}

BODY void alias_int_body(int *x, const int *y, int n) {
  DIST
  for (int i = 0; i < n; i++) {
    x[i] = (y[i] & 255) + 1;
  }
}

void alias_int(void) {
  alias_int_body(ia, ib, LEN);
  alias_int_body(ib + 1, ib, LEN - 1);
}

BODY void alias_stride_body(float *x, const float *y, int n) {
  DIST
  for (int i = 0; i < n; i++) {
    x[2 * i] = y[i] * 3.0f;
  }
}

void alias_stride(void) {
  alias_stride_body(a, b, LEN / 2);
  alias_stride_body(c, c + 1, LEN / 2 - 1);
}

BODY void alias_reduce_store_body(float *x, const float *y, float *out, int n) {
  float s = 0.0f;
  DIST
  for (int i = 0; i < n; i++) {
    x[i] = y[i] * y[i];
    s += y[i];
  }
  *out += s;
}

void alias_reduce_store(void) {
  alias_reduce_store_body(a, b, &res[0], LEN);
  alias_reduce_store_body(c + 1, c, &res[1], LEN - 1);
}

BODY void alias_2d_body(float (*x)[LEN2], const float (*y)[LEN2], int n) {
  for (int i = 1; i < n; i++) {
    DIST
    for (int j = 0; j < LEN2; j++) {
      x[i][j] = y[i - 1][j] + 1.0f;
    }
  }
}

void alias_2d(void) {
  alias_2d_body(aa, (const float (*)[LEN2])bb, LEN2);
  alias_2d_body(cc, (const float (*)[LEN2])cc, LEN2);
}
