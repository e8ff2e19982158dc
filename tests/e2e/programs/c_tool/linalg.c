/* Dense linear algebra: matrix product, transpose-vector product, and a
 * triangular solve; prints exact checksums. */
#include <stdio.h>

#define N 48

static double A[N][N], B[N][N], C[N][N], x[N], y[N];

static void init(void) {
  int i, j;
  for (i = 0; i < N; i++)
    for (j = 0; j < N; j++) {
      A[i][j] = (double)((i * 7 + j * 3) % 19) / 19.0 - 0.5;
      B[i][j] = (double)((i * 5 + j * 11) % 23) / 23.0;
      C[i][j] = 0.0;
    }
  for (i = 0; i < N; ++i) x[i] = (double)(i % 13) / 13.0;
}

static void matmul(void) {
  for (int i = 0; i < N; i++)
    for (int k = 0; k < N; k++) {
      double a = A[i][k];
      for (int j = 0; j < N; j++) C[i][j] += a * B[k][j];
    }
}

static void atx(void) {
  int i, j;
  for (j = 0; j < N; j++) y[j] = 0.0;
  for (i = 0; i < N; i++)
    for (j = 0; j < N; j++) y[j] += A[i][j] * x[i];
}

/* Forward substitution with a unit lower triangle taken from B. */
static void trisolve(double *v) {
  for (int i = 1; i < N; i++) {
    double s = v[i];
    for (int j = 0; j < i; j++) s -= B[i][j] * 0.01 * v[j];
    v[i] = s;
  }
}

int main(void) {
  double s = 0.0, t = 0.0;
  int i = 0;
  init();
  matmul();
  atx();
  trisolve(y);
  for (i = 0; i < N; i++) {
    for (int j = 0; j < N; j++) s += C[i][j] * (double)(j + 1);
    t += y[i];
  }
  printf("%a %a\n", s, t);
  return 0;
}
