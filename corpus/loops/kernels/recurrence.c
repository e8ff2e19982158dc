/* recurrence: first- and second-order linear recurrences, prefix sums,
 * and recurrences sharing a loop with independent statements. */
#include "loops.h"

void recurrence_first(void) {
  DIST
  for (int i = 1; i < LEN; i++) {
    a[i] = a[i - 1] * b[i] + c[i];
  }
}

void recurrence_second(void) {
  DIST
  for (int i = 2; i < LEN; i++) {
    a[i] = a[i - 1] * 0.5f + a[i - 2] * 0.25f + b[i];
  }
}

void recurrence_prefix(void) {
  DIST
  for (int i = 1; i < LEN; i++) {
    f[i] = f[i - 1] + c[i];
  }
}

void recurrence_int_prefix(void) {
  DIST
  for (int i = 1; i < LEN; i++) {
    ib[i] = (ib[i - 1] + ib[i]) & 1023;
  }
}

void recurrence_scalar(void) {
  float t = 0.0f;
  DIST
  for (int i = 0; i < LEN; i++) {
    t = t * 0.5f + b[i];
    a[i] = t;
  }
}

void recurrence_plus_map(void) {
  DIST
  for (int i = 1; i < LEN; i++) {
    a[i] = a[i - 1] * 0.5f + b[i];
    c[i] = d[i] * e[i] + 1.0f;
  }
}

void recurrence_plus_two_maps(void) {
  DIST
  for (int i = 1; i < LEN; i++) {
    d[i] = b[i] * c[i];
    a[i] = a[i - 1] + d[i];
    e[i] = c[i] * c[i] - b[i];
  }
}

void recurrence_tridiag(void) {
  DIST
  for (int i = 1; i < LEN; i++) {
    f[i] = (d[i] - c[i] * f[i - 1]) * 0.5f;
  }
}

void recurrence_coupled(void) {
  DIST
  for (int i = 1; i < LEN; i++) {
    a[i] = b[i - 1] * 0.5f + c[i];
    b[i] = a[i - 1] * 0.5f + d[i];
  }
}
