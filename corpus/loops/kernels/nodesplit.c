/* nodesplit: a statement both reads an element that another statement
 * writes later (anti) and one it wrote earlier (true): a dependence cycle
 * that copying the old value (node splitting) breaks. */
#include "loops.h"

void nodesplit_basic(void) {
  DIST
  for (int i = 0; i < LEN - 1; i++) {
    a[i] = b[i] + c[i];
    b[i] = a[i + 1] * d[i];
  }
}

void nodesplit_cycle(void) {
  DIST
  for (int i = 1; i < LEN - 1; i++) {
    a[i] = b[i - 1] + a[i + 1];
    b[i] = a[i] * c[i];
  }
}

void nodesplit_three(void) {
  DIST
  for (int i = 0; i < LEN - 1; i++) {
    a[i] = c[i] * d[i];
    c[i] = a[i + 1] + e[i];
    f[i] = c[i] - a[i];
  }
}

void nodesplit_far(void) {
  DIST
  for (int i = 0; i < LEN - 8; i++) {
    a[i] = b[i + 8] * 0.5f;
    b[i] = a[i] + c[i];
  }
}

void nodesplit_int(void) {
  DIST
  for (int i = 0; i < LEN - 1; i++) {
    ia[i] = ib[i] + ic[i];
    ib[i] = (ia[i + 1] & 31) + 1;
  }
}

void nodesplit_self(void) {
  DIST
  for (int i = 1; i < LEN - 1; i++) {
    a[i] = (a[i - 1] + a[i + 1]) * 0.5f;
    d[i] = a[i] * e[i];
  }
}

void nodesplit_with_map(void) {
  DIST
  for (int i = 0; i < LEN - 2; i++) {
    a[i] = b[i] + c[i];
    e[i] = d[i] * d[i];
    b[i] = a[i + 2] * 0.5f;
  }
}
