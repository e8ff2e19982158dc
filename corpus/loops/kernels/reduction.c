/* reduction: sums, products, dot products, min/max with and without index,
 * and loops that carry a reduction next to independent work. */
#include "loops.h"

void reduction_sum(void) {
  float s = 0.0f;
  DIST
  for (int i = 0; i < LEN; i++) {
    s += a[i];
  }
  res[0] += s;
}

void reduction_dot(void) {
  float s = 0.0f;
  DIST
  for (int i = 0; i < LEN; i++) {
    s += a[i] * b[i];
  }
  res[0] += s;
}

void reduction_int_sum(void) {
  int s = 0;
  DIST
  for (int i = 0; i < LEN; i++) {
    s += ia[i] * ib[i];
  }
  ires[0] += s;
}

void reduction_max(void) {
  float m = a[0];
  DIST
  for (int i = 1; i < LEN; i++) {
    m = b[i] > m ? b[i] : m;
  }
  res[1] = m;
}

void reduction_argmax(void) {
  float m = d[0];
  int at = 0;
  DIST
  for (int i = 1; i < LEN; i++) {
    if (d[i] > m) {
      m = d[i];
      at = i;
    }
  }
  res[1] = m;
  ires[1] = at;
}

void reduction_int_min(void) {
  int m = ia[0];
  DIST
  for (int i = 1; i < LEN; i++) {
    m = ia[i] < m ? ia[i] : m;
  }
  ires[2] = m;
}

void reduction_with_store(void) {
  float s = 0.0f;
  DIST
  for (int i = 0; i < LEN; i++) {
    a[i] = b[i] * c[i];
    s += a[i];
  }
  res[2] = s;
}

void reduction_two(void) {
  float s = 0.0f, t = 0.0f;
  DIST
  for (int i = 0; i < LEN; i++) {
    s += a[i] * b[i];
    t += c[i] * d[i];
  }
  res[2] = s;
  res[3] = t;
}

void reduction_count(void) {
  int n = 0;
  DIST
  for (int i = 0; i < LEN; i++) {
    n += d[i] > 0.0f;
  }
  ires[3] = n;
}

void reduction_rows(void) {
  for (int i = 0; i < LEN2; i++) {
    float s = 0.0f;
    DIST
    for (int j = 0; j < LEN2; j++) {
      s += aa[i][j];
    }
    a[i] = s;
  }
}

void reduction_and_carried(void) {
  float s = 0.0f;
  DIST
  for (int i = 1; i < LEN; i++) {
    b[i] = b[i - 1] * 0.5f + c[i];
    s += a[i] * e[i];
  }
  res[0] = s;
}
