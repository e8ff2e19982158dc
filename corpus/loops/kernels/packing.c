/* packing: gathers, scatters, packing the selected elements of an array
 * and unpacking them again, indirect reads through index arrays. */
#include "loops.h"

void packing_pack_pos(void) {
  int j = 0;
  for (int i = 0; i < LEN; i++) {
    if (d[i] > 0.0f) {
      f[j] = d[i];
      j++;
    }
  }
  ires[0] = j;
}

void packing_unpack(void) {
  int j = 0;
  for (int i = 0; i < LEN; i++) {
    if (ia[i] > 0) {
      a[i] = b[j];
      j++;
    }
  }
  ires[1] = j;
}

void packing_gather(void) {
  DIST
  for (int i = 0; i < LEN; i++) {
    a[i] = b[ip[i]] + c[i];
  }
}

void packing_scatter(void) {
  DIST
  for (int i = 0; i < LEN; i++) {
    a[ip[i]] = b[i] * c[i];
  }
}

void packing_gather_map(void) {
  DIST
  for (int i = 0; i < LEN; i++) {
    a[i] = b[ip[i]] * 0.5f;
    d[i] = c[i] + e[i];
  }
}

void packing_histogram(void) {
  DIST
  for (int i = 0; i < LEN; i++) {
    ib[ic[i]] += 1;
  }
}

void packing_interleave(void) {
  DIST
  for (int i = 0; i < LEN / 2; i++) {
    a[2 * i] = b[i];
    a[2 * i + 1] = c[i];
  }
}

void packing_deinterleave(void) {
  DIST
  for (int i = 0; i < LEN / 2; i++) {
    b[i] = a[2 * i] + a[2 * i + 1];
    c[i] = a[2 * i] - a[2 * i + 1];
  }
}

void packing_gather_2d(void) {
  DIST
  for (int i = 0; i < LEN2; i++) {
    a[i] = aa[ic[i]][i] + bb[i][ic[i]];
  }
}
