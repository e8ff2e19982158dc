/* nested: two-dimensional loops (interchange candidates, row/column
 * dependences, triangular nests); DIST marks the inner loop. */
#include "loops.h"

void nested_row_dep(void) {
  for (int i = 1; i < LEN2; i++) {
    DIST
    for (int j = 0; j < LEN2; j++) {
      aa[i][j] = aa[i - 1][j] * 0.5f + bb[i][j];
    }
  }
}

void nested_col_dep(void) {
  for (int i = 0; i < LEN2; i++) {
    DIST
    for (int j = 1; j < LEN2; j++) {
      aa[i][j] = aa[i][j - 1] * 0.5f + bb[i][j];
    }
  }
}

void nested_transpose_add(void) {
  for (int i = 0; i < LEN2; i++) {
    DIST
    for (int j = 0; j < LEN2; j++) {
      aa[i][j] = bb[j][i] + cc[i][j];
    }
  }
}

void nested_column_walk(void) {
  for (int j = 0; j < LEN2; j++) {
    DIST
    for (int i = 1; i < LEN2; i++) {
      aa[i][j] = aa[i - 1][j] + bb[i][j];
    }
  }
}

void nested_triangular(void) {
  for (int i = 0; i < LEN2; i++) {
    DIST
    for (int j = i; j < LEN2; j++) {
      aa[i][j] = bb[i][j] * cc[j][i] + 1.0f;
    }
  }
}

void nested_two_arrays(void) {
  for (int i = 1; i < LEN2; i++) {
    DIST
    for (int j = 0; j < LEN2; j++) {
      aa[i][j] = aa[i - 1][j] + bb[i][j];
      cc[i][j] = bb[i][j] * 0.5f;
    }
  }
}

void nested_diag(void) {
  for (int i = 1; i < LEN2; i++) {
    DIST
    for (int j = 1; j < LEN2; j++) {
      aa[i][j] = aa[i - 1][j - 1] + bb[i][j];
    }
  }
}

void nested_row_sum_store(void) {
  for (int i = 0; i < LEN2; i++) {
    DIST
    for (int j = 1; j < LEN2; j++) {
      aa[i][j] = aa[i][j - 1] + bb[i][j];
      cc[i][j] = bb[i][j] * bb[i][j];
    }
  }
}

/* Matrix-vector products: the inner loop walks a row (and maybe a column)
 * and carries one or more sums; splitting it only repeats the walk. */
void nested_mv_row_and_column(void) {
  for (int i = 0; i < LEN2; i++) {
    float s = 0.0f, t = 0.0f;
    DIST
    for (int j = 0; j < LEN2; j++) {
      s += aa[i][j] * b[j];
      t += bb[j][i] * c[j];
    }
    a[i] = s;
    d[i] = t;
  }
}

void nested_mv_two_rows(void) {
  for (int i = 0; i < LEN2; i++) {
    float s = 0.0f, t = 0.0f;
    DIST
    for (int j = 0; j < LEN2; j++) {
      s += aa[i][j] * e[j];
      t += cc[i][j] * e[j];
    }
    a[i] = s + t;
  }
}

void nested_mv_sum_and_scale(void) {
  for (int i = 0; i < LEN2; i++) {
    float s = 0.0f;
    DIST
    for (int j = 0; j < LEN2; j++) {
      s += aa[i][j] * b[j];
      cc[i][j] = bb[i][j] * 0.5f;
    }
    d[i] = s;
  }
}

void nested_mv_column_update(void) {
  for (int i = 0; i < LEN2; i++) {
    float s = 0.0f;
    DIST
    for (int j = 0; j < LEN2; j++) {
      s += bb[i][j] * c[j];
      e[j] = e[j] + bb[i][j] * f[i];
    }
    a[i] = s;
  }
}

void nested_mv_three_sums(void) {
  for (int i = 0; i < LEN2; i++) {
    float s = 0.0f, t = 0.0f, u = 0.0f;
    DIST
    for (int j = 0; j < LEN2; j++) {
      s += aa[i][j] * b[j];
      t += aa[j][i] * c[j];
      u += bb[i][j];
    }
    a[i] = s;
    d[i] = t * u;
  }
}
