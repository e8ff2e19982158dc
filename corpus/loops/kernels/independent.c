/* independent: loop-independent dependences between the statements of one
 * iteration (a value written and read in the same iteration). */
#include "loops.h"

void independent_chain2(void) {
  DIST
  for (int i = 0; i < LEN; i++) {
    a[i] = b[i] + c[i];
    d[i] = a[i] * e[i];
  }
}

void independent_chain3(void) {
  DIST
  for (int i = 0; i < LEN; i++) {
    a[i] = b[i] * c[i];
    d[i] = a[i] + e[i];
    f[i] = d[i] * a[i];
  }
}

void independent_fan(void) {
  DIST
  for (int i = 0; i < LEN; i++) {
    a[i] = b[i] + 1.0f;
    c[i] = a[i] * 2.0f;
    d[i] = a[i] - e[i];
  }
}

void independent_join(void) {
  DIST
  for (int i = 0; i < LEN; i++) {
    a[i] = b[i] * 0.5f;
    c[i] = d[i] * 0.25f;
    e[i] = a[i] + c[i];
  }
}

void independent_overwrite(void) {
  DIST
  for (int i = 0; i < LEN; i++) {
    a[i] = b[i] + c[i];
    a[i] = a[i] * d[i];
  }
}

void independent_readback(void) {
  DIST
  for (int i = 0; i < LEN; i++) {
    b[i] = a[i] + c[i];
    a[i] = b[i] * 0.5f;
  }
}

void independent_int(void) {
  DIST
  for (int i = 0; i < LEN; i++) {
    ia[i] = ib[i] * 3 - ia[i] / 4;
    ic[i] = (ia[i] & 15) % LEN2;
  }
}

void independent_four(void) {
  DIST
  for (int i = 0; i < LEN; i++) {
    a[i] = b[i] + c[i];
    d[i] = b[i] - c[i];
    e[i] = a[i] * d[i];
    f[i] = a[i] + d[i];
  }
}
