/* induction: secondary induction variables, conditional and wrapped ones. */
#include "loops.h"

void induction_second(void) {
  int j = 0;
  DIST
  for (int i = 0; i < LEN / 2; i++) {
    a[j] = b[i] + c[i];
    j += 2;
  }
}

void induction_down(void) {
  int j = LEN - 1;
  DIST
  for (int i = 0; i < LEN; i++) {
    a[i] = b[j] * c[i];
    j--;
  }
}

void induction_float(void) {
  float t = 0.0f;
  DIST
  for (int i = 0; i < LEN; i++) {
    a[i] = b[i] + t;
    t += 0.125f;
  }
}

void induction_cond(void) {
  int j = 0;
  for (int i = 0; i < LEN; i++) {
    if (d[i] > 0.0f) {
      a[j] = b[i];
      j++;
    }
  }
  ires[0] = j;
}

void induction_stride3(void) {
  DIST
  for (int i = 0; i < LEN / 3; i++) {
    a[3 * i] = b[3 * i] + c[i];
    d[i] = a[3 * i + 1] * e[i];
  }
}

void induction_two(void) {
  int j = 0, k = LEN - 1;
  DIST
  for (int i = 0; i < LEN / 2; i++) {
    a[j] = b[k] + c[i];
    d[k] = e[j] * 0.5f;
    j++;
    k--;
  }
}

void induction_coupled(void) {
  int k = 1;
  DIST
  for (int i = 0; i < LEN - 2; i++) {
    a[i] = b[k] + c[i];
    k = i + 2;
  }
}

void induction_step_var(void) {
  int s = ib[2] % 3 + 1;
  DIST
  for (int i = 0; i < LEN; i += s) {
    a[i] = b[i] * c[i] + d[i];
  }
}

void induction_triangle(void) {
  int k = 0;
  for (int i = 0; i < 40; i++) {
    DIST
    for (int j = 0; j < i; j++) {
      a[k + j] = a[k + j] + b[j] * c[i];
    }
    k += i;
  }
}
