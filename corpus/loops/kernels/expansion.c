/* expansion: scalars carried across statements of one iteration (scalar
 * expansion turns them into arrays), temporaries reused across
 * iterations, and arrays reused for another purpose (array expansion). */
#include "loops.h"

void expansion_scalar_temp(void) {
  DIST
  for (int i = 0; i < LEN; i++) {
    float t = b[i] * c[i];
    a[i] = t + d[i];
    e[i] = t * 0.5f;
  }
}

void expansion_scalar_outside(void) {
  float t = 0.0f;
  DIST
  for (int i = 0; i < LEN; i++) {
    t = b[i] + c[i];
    a[i] = t * t;
  }
  res[0] = t;
}

void expansion_carried_scalar(void) {
  float t = 0.0f;
  DIST
  for (int i = 0; i < LEN; i++) {
    a[i] = b[i] + t;
    t = c[i] * d[i];
  }
}

void expansion_two_temps(void) {
  DIST
  for (int i = 0; i < LEN; i++) {
    float s = b[i] + c[i];
    float t = b[i] - c[i];
    a[i] = s * t;
    d[i] = s + t;
  }
}

void expansion_temp_and_rec(void) {
  DIST
  for (int i = 1; i < LEN; i++) {
    float t = b[i] * e[i];
    a[i] = a[i - 1] * 0.5f + t;
    c[i] = t + d[i];
  }
}

void expansion_array_reuse(void) {
  for (int j = 0; j < LEN2; j++) {
    DIST
    for (int i = 0; i < LEN2; i++) {
      f[i] = bb[j][i] * 2.0f;
      aa[j][i] = f[i] + cc[j][i];
    }
  }
}

void expansion_int_temp(void) {
  DIST
  for (int i = 0; i < LEN; i++) {
    int t = ia[i] * 2 + ib[i];
    ic[i] = t & (LEN2 - 16);
    a[i] = (float)t * 0.5f;
  }
}

void expansion_cond_temp(void) {
  DIST
  for (int i = 0; i < LEN; i++) {
    float t = d[i];
    if (t < 0.0f)
      t = -t;
    a[i] = t + b[i];
    c[i] = t * e[i];
  }
}
