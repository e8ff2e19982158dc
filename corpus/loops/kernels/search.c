/* search: loops that stop early or find the first/last element with a
 * property. */
#include "loops.h"

void search_first_neg(void) {
  int at = -1;
  for (int i = 0; i < LEN; i++) {
    if (d[i] < -0.2f) {
      at = i;
      break;
    }
  }
  ires[0] = at;
}

void search_last_pos(void) {
  int at = -1;
  DIST
  for (int i = 0; i < LEN; i++) {
    if (d[i] > 0.3f) {
      at = i;
    }
  }
  ires[1] = at;
}

void search_value(void) {
  float key = b[LEN / 2];
  int at = LEN;
  for (int i = 0; i < LEN; i++) {
    if (b[i] == key) {
      at = i;
      break;
    }
  }
  ires[2] = at;
}

void search_copy_until(void) {
  int i = 0;
  while (i < LEN && ia[i] != 49) {
    a[i] = b[i] * 2.0f;
    i++;
  }
  ires[3] = i;
}

void search_threshold_sum(void) {
  float s = 0.0f;
  int i = 0;
  for (; i < LEN; i++) {
    s += a[i];
    if (s > 100.0f)
      break;
  }
  res[0] = s;
  ires[0] = i;
}

void search_count_runs(void) {
  int runs = 0;
  DIST
  for (int i = 1; i < LEN; i++) {
    runs += (d[i] > 0.0f) != (d[i - 1] > 0.0f);
  }
  ires[1] = runs;
}

void search_min_index_2d(void) {
  float m = bb[0][0];
  int at = 0;
  for (int i = 0; i < LEN2; i++) {
    DIST
    for (int j = 0; j < LEN2; j++) {
      if (bb[i][j] < m) {
        m = bb[i][j];
        at = i * LEN2 + j;
      }
    }
  }
  res[1] = m;
  ires[2] = at;
}
