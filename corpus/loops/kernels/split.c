/* split: longer loops mixing several independent computations with a
 * sequential one (a carried dependence, a conditional recurrence, an
 * integer state update); the natural case for choosing a partition. */
#include "loops.h"

void split_rec_first(void) {
  DIST
  for (int i = 1; i < LEN; i++) {
    a[i] = a[i - 1] * 0.5f + e[i];
    b[i] = c[i] * d[i];
    f[i] = b[i] + c[i];
  }
}

void split_rec_last(void) {
  DIST
  for (int i = 1; i < LEN; i++) {
    b[i] = c[i] + d[i];
    f[i] = b[i] * 0.5f;
    a[i] = a[i - 1] + f[i];
  }
}

void split_two_recs(void) {
  DIST
  for (int i = 1; i < LEN; i++) {
    a[i] = a[i - 1] * 0.5f + b[i];
    c[i] = d[i] * e[i];
    f[i] = f[i - 1] * 0.25f + c[i];
  }
}

void split_state_machine(void) {
  int s = 0;
  DIST
  for (int i = 0; i < LEN; i++) {
    s = (s * 5 + ib[i]) & 127;
    ic[i] = s % LEN2;
    a[i] = b[i] * c[i] + d[i];
  }
}

void split_cond_rec(void) {
  float t = 0.0f;
  DIST
  for (int i = 0; i < LEN; i++) {
    if (d[i] > 0.0f)
      t = t * 0.5f + d[i];
    a[i] = t;
    c[i] = b[i] * e[i];
  }
}

void split_scatter_two_maps(void) {
  DIST
  for (int i = 0; i < LEN; i++) {
    a[i] = b[i] + c[i];
    f[ip[i]] = e[i];
    d[i] = b[i] * c[i];
  }
}

void split_wide(void) {
  DIST
  for (int i = 1; i < LEN; i++) {
    a[i] = b[i] + 1.0f;
    c[i] = c[i - 1] * 0.5f + a[i];
    d[i] = e[i] * 2.0f;
    f[i] = d[i] + a[i];
    e[i] = b[i] - 1.0f;
  }
}

void split_anti_chain(void) {
  DIST
  for (int i = 1; i < LEN - 1; i++) {
    a[i] = b[i + 1] * c[i];
    b[i] = d[i] + e[i];
    f[i] = f[i - 1] + a[i];
  }
}
