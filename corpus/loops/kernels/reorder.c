/* reorder: statements whose order hides a vectorizable schedule: a read
 * of an element that a later statement writes in the next iteration, which
 * reordering (or distributing) the statements fixes. */
#include "loops.h"

void reorder_swap_two(void) {
  DIST
  for (int i = 1; i < LEN; i++) {
    a[i] = b[i - 1] + c[i];
    b[i] = d[i] * e[i];
  }
}

void reorder_three(void) {
  DIST
  for (int i = 1; i < LEN; i++) {
    a[i] = c[i - 1] * 0.5f;
    b[i] = a[i] + d[i];
    c[i] = e[i] + 1.0f;
  }
}

void reorder_read_ahead(void) {
  DIST
  for (int i = 0; i < LEN - 1; i++) {
    a[i] = b[i] + c[i];
    b[i + 1] = d[i] * 2.0f;
  }
}

void reorder_distance2(void) {
  DIST
  for (int i = 2; i < LEN; i++) {
    a[i] = b[i - 2] * c[i];
    b[i] = d[i] + e[i];
  }
}

void reorder_chain_back(void) {
  DIST
  for (int i = 1; i < LEN; i++) {
    d[i] = c[i - 1] + e[i];
    c[i] = b[i - 1] * 0.5f;
    b[i] = a[i] + 1.0f;
  }
}

void reorder_int(void) {
  DIST
  for (int i = 1; i < LEN; i++) {
    ia[i] = ib[i - 1] + 3;
    ib[i] = (ia[i] & 63) + 1;
  }
}

void reorder_with_map(void) {
  DIST
  for (int i = 1; i < LEN; i++) {
    a[i] = b[i - 1] + c[i];
    f[i] = e[i] * e[i];
    b[i] = d[i] - c[i];
  }
}

void reorder_cycle_free(void) {
  DIST
  for (int i = 1; i < LEN - 1; i++) {
    a[i] = b[i + 1] + c[i];
    b[i] = d[i - 1] * e[i];
    d[i] = c[i] * 0.5f;
  }
}
