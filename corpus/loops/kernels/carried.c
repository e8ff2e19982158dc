/* carried: loop-carried dependences at various distances, forward (an
 * anti-dependence: read before the later write) and backward (a true
 * dependence: read of an earlier iteration's write). */
#include "loops.h"

void carried_anti1(void) {
  DIST
  for (int i = 0; i < LEN - 1; i++) {
    a[i] = a[i + 1] + b[i];
  }
}

void carried_anti4(void) {
  DIST
  for (int i = 0; i < LEN - 4; i++) {
    a[i] = a[i + 4] * c[i] + b[i];
  }
}

void carried_true1(void) {
  DIST
  for (int i = 1; i < LEN; i++) {
    a[i] = a[i - 1] * 0.5f + b[i];
  }
}

void carried_true2(void) {
  DIST
  for (int i = 2; i < LEN; i++) {
    a[i] = a[i - 2] * 0.5f + c[i];
  }
}

void carried_true8(void) {
  DIST
  for (int i = 8; i < LEN; i++) {
    b[i] = b[i - 8] * 0.75f + e[i];
  }
}

void carried_true32(void) {
  DIST
  for (int i = 32; i < LEN; i++) {
    c[i] = c[i - 32] * 0.5f + a[i] * d[i];
  }
}

void carried_cross2(void) {
  DIST
  for (int i = 1; i < LEN; i++) {
    a[i] = b[i - 1] + c[i];
    b[i] = a[i] * 0.5f + d[i];
  }
}

void carried_half(void) {
  /* a[i + LEN/2] never overlaps a[i] inside the loop: no dependence. */
  DIST
  for (int i = 0; i < LEN / 2; i++) {
    a[i + LEN / 2] = a[i] + b[i];
  }
}

void carried_symbolic(void) {
  /* distance read from data: the compiler cannot know it. */
  int k = ib[0];
  DIST
  for (int i = k; i < LEN; i++) {
    a[i] = a[i - k] * 0.5f + b[i];
  }
}

void carried_two_stmt_fwd(void) {
  DIST
  for (int i = 0; i < LEN - 1; i++) {
    a[i] = b[i] + c[i];
    d[i] = a[i + 1] * e[i];
  }
}

void carried_two_stmt_bwd(void) {
  DIST
  for (int i = 1; i < LEN; i++) {
    a[i] = b[i] + c[i];
    d[i] = a[i - 1] * e[i];
  }
}

void carried_mixed(void) {
  DIST
  for (int i = 4; i < LEN - 4; i++) {
    a[i] = a[i - 4] * 0.5f + b[i];
    c[i] = c[i + 4] + d[i];
  }
}
