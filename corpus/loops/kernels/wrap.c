/* wrap: wrap-around variables (a value from the previous iteration carried
 * in a scalar), loop peeling candidates, index crossing a threshold. */
#include "loops.h"

void wrap_prev(void) {
  int im1 = LEN - 1;
  DIST
  for (int i = 0; i < LEN; i++) {
    a[i] = (b[i] + b[im1]) * 0.5f;
    im1 = i;
  }
}

void wrap_two_back(void) {
  int im1 = LEN - 1, im2 = LEN - 2;
  DIST
  for (int i = 0; i < LEN; i++) {
    a[i] = b[i] + b[im1] + b[im2];
    im2 = im1;
    im1 = i;
  }
}

void wrap_scalar_prev(void) {
  float prev = b[LEN - 1];
  DIST
  for (int i = 0; i < LEN; i++) {
    a[i] = b[i] - prev;
    prev = b[i];
  }
}

void wrap_crossing(void) {
  /* reads above the midpoint and writes below it: no overlap at all. */
  DIST
  for (int i = 0; i < LEN / 2; i++) {
    a[i] = a[LEN - 1 - i] + b[i];
  }
}

void wrap_crossing_full(void) {
  /* the reads cross the writes halfway through. */
  DIST
  for (int i = 0; i < LEN; i++) {
    a[i] = a[LEN - 1 - i] * 0.5f + b[i];
  }
}

void wrap_first_iter(void) {
  DIST
  for (int i = 0; i < LEN; i++) {
    a[i] = b[i] + a[0];
  }
}

void wrap_peel_last(void) {
  DIST
  for (int i = 0; i < LEN; i++) {
    a[i] = b[i] * a[LEN - 1];
  }
}

void wrap_mod(void) {
  DIST
  for (int i = 0; i < LEN; i++) {
    a[i] = b[(i + 5) % LEN] + c[i];
  }
}
