/* linalg: dense linear-algebra and stencil nests in the style of
 * PolyBench (matrix-vector products, rank-1 updates, Jacobi and
 * Gauss-Seidel sweeps, a triangular solve); several of them fuse two
 * computations that could be split. */
#include "loops.h"

void linalg_gemv(void) {
  for (int i = 0; i < LEN2; i++) {
    float s = 0.0f;
    DIST
    for (int j = 0; j < LEN2; j++) {
      s += aa[i][j] * b[j];
    }
    a[i] = s;
  }
}

void linalg_gemv_t(void) {
  for (int i = 0; i < LEN2; i++) {
    DIST
    for (int j = 0; j < LEN2; j++) {
      c[j] = c[j] + aa[i][j] * b[i];
    }
  }
}

void linalg_two_mv(void) {
  /* two products sharing the matrix in one loop (the BiCG kernel's shape). */
  for (int i = 0; i < LEN2; i++) {
    DIST
    for (int j = 0; j < LEN2; j++) {
      c[j] = c[j] + b[i] * aa[i][j];
      d[i] = d[i] + aa[i][j] * e[j];
    }
  }
}

void linalg_rank1(void) {
  for (int i = 0; i < LEN2; i++) {
    DIST
    for (int j = 0; j < LEN2; j++) {
      aa[i][j] = aa[i][j] + b[i] * c[j] + d[i] * e[j];
    }
  }
}

void linalg_jacobi_1d(void) {
  DIST
  for (int i = 1; i < LEN - 1; i++) {
    f[i] = (a[i - 1] + a[i] + a[i + 1]) * 0.33333f;
  }
  DIST
  for (int i = 1; i < LEN - 1; i++) {
    a[i] = f[i];
  }
}

void linalg_jacobi_2d(void) {
  for (int i = 1; i < LEN2 - 1; i++) {
    DIST
    for (int j = 1; j < LEN2 - 1; j++) {
      bb[i][j] = (aa[i][j] + aa[i][j - 1] + aa[i][j + 1] + aa[i - 1][j] + aa[i + 1][j]) * 0.2f;
    }
  }
}

void linalg_seidel_2d(void) {
  for (int i = 1; i < LEN2 - 1; i++) {
    DIST
    for (int j = 1; j < LEN2 - 1; j++) {
      aa[i][j] = (aa[i - 1][j] + aa[i][j - 1] + aa[i][j] + aa[i][j + 1] + aa[i + 1][j]) * 0.2f;
    }
  }
}

void linalg_trisolv(void) {
  for (int i = 0; i < LEN2; i++) {
    float s = b[i];
    DIST
    for (int j = 0; j < i; j++) {
      s -= aa[i][j] * f[j];
    }
    f[i] = s / (aa[i][i] + 1.0f);
  }
}

void linalg_mvt(void) {
  for (int i = 0; i < LEN2; i++) {
    DIST
    for (int j = 0; j < LEN2; j++) {
      c[i] = c[i] + aa[i][j] * e[j];
      d[i] = d[i] + aa[j][i] * b[j];
    }
  }
}

void linalg_syrk_row(void) {
  for (int i = 0; i < LEN2; i++) {
    DIST
    for (int j = 0; j <= i; j++) {
      cc[i][j] = cc[i][j] * 0.5f + aa[i][j] * aa[j][i];
    }
  }
}
