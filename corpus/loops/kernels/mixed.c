/* mixed: multi-statement loops with one statement that cannot vectorize
 * (a recurrence, an indirect update) next to statements that can; a
 * distribution can let the independent part vectorize. */
#include "loops.h"

void mixed_rec_map(void) {
  DIST
  for (int i = 1; i < LEN; i++) {
    a[i] = a[i - 1] + b[i];
    c[i] = d[i] * e[i];
  }
}

void mixed_map_rec(void) {
  DIST
  for (int i = 1; i < LEN; i++) {
    c[i] = d[i] * e[i] + b[i];
    a[i] = a[i - 1] * 0.5f + c[i];
  }
}

void mixed_rec_two_maps(void) {
  DIST
  for (int i = 1; i < LEN; i++) {
    d[i] = b[i] + e[i];
    a[i] = a[i - 1] * c[i];
    f[i] = e[i] * e[i];
  }
}

void mixed_scatter_map(void) {
  DIST
  for (int i = 0; i < LEN; i++) {
    a[ip[i]] = a[ip[i]] + b[i];
    c[i] = d[i] * e[i];
  }
}

void mixed_int_rec_map(void) {
  DIST
  for (int i = 1; i < LEN; i++) {
    ib[i] = (ib[i - 1] * 3 + ib[i]) & 255;
    a[i] = b[i] * c[i];
  }
}

void mixed_anti_true(void) {
  DIST
  for (int i = 1; i < LEN - 1; i++) {
    a[i] = b[i] + c[i];
    b[i] = a[i + 1] * d[i];
    e[i] = e[i - 1] + a[i];
  }
}

void mixed_three_stage(void) {
  DIST
  for (int i = 1; i < LEN; i++) {
    a[i] = b[i] * 2.0f;
    c[i] = c[i - 1] * 0.5f + a[i];
    d[i] = c[i] + e[i];
  }
}

void mixed_long_body(void) {
  DIST
  for (int i = 1; i < LEN; i++) {
    a[i] = b[i] + c[i];
    d[i] = b[i] - c[i];
    e[i] = e[i - 1] * 0.5f + a[i];
    f[i] = a[i] * d[i];
  }
}

void mixed_guarded_rec(void) {
  DIST
  for (int i = 1; i < LEN; i++) {
    if (d[i] > 0.0f) {
      a[i] = a[i - 1] + b[i];
    }
    c[i] = b[i] * e[i];
    f[i] = c[i] + d[i];
  }
}

void mixed_prefix_and_scale(void) {
  DIST
  for (int i = 1; i < LEN; i++) {
    f[i] = f[i - 1] + a[i];
    b[i] = b[i] * 0.5f;
    c[i] = c[i] + d[i];
  }
}

void mixed_search_and_map(void) {
  int last = -1;
  DIST
  for (int i = 0; i < LEN; i++) {
    if (ia[i] == 0) {
      last = i;
    }
    a[i] = b[i] * c[i];
  }
  ires[0] = last;
}

void mixed_div_and_rec(void) {
  DIST
  for (int i = 1; i < LEN; i++) {
    a[i] = b[i] / e[i];
    c[i] = c[i - 1] * 0.25f + d[i];
  }
}
