#include "common.h"

void mat_identity(mat *a) {
  for (int i = 0; i < MDIM; ++i)
    for (int j = 0; j < MDIM; ++j)
      a->m[i][j] = i == j;
}

static int64_t lcg(int64_t *state) {
  *state = (*state * 1103515245 + 12345) % 2147483648;
  return *state % 19 - 9;
}

void mat_fill(mat *a, int64_t seed) {
  for (int i = 0; i < MDIM; ++i)
    for (int j = 0; j < MDIM; ++j)
      a->m[i][j] = lcg(&seed);
}

static int64_t dot_row_col(const mat *a, const mat *b, int r, int c) {
  int64_t s = 0;
  for (int k = 0; k < MDIM; ++k)
    s += a->m[r][k] * b->m[k][c];
  return s;
}

void mat_mul(mat *out, const mat *a, const mat *b) {
  mat t;
  for (int i = 0; i < MDIM; ++i)
    for (int j = 0; j < MDIM; ++j)
      t.m[i][j] = dot_row_col(a, b, i, j);
  *out = t;
}

void mat_transpose(mat *out, const mat *a) {
  mat t;
  for (int i = 0; i < MDIM; ++i)
    for (int j = 0; j < MDIM; ++j)
      t.m[j][i] = a->m[i][j];
  *out = t;
}

int64_t mat_trace(const mat *a) {
  int64_t s = 0;
  for (int i = 0; i < MDIM; ++i)
    s += a->m[i][i];
  return s;
}

static int64_t det2(int64_t a, int64_t b, int64_t c, int64_t d) {
  return a * d - b * c;
}

int64_t mat_det3(const mat *a) {
  const int64_t(*m)[MDIM] = a->m;
  return m[0][0] * det2(m[1][1], m[1][2], m[2][1], m[2][2]) -
         m[0][1] * det2(m[1][0], m[1][2], m[2][0], m[2][2]) +
         m[0][2] * det2(m[1][0], m[1][1], m[2][0], m[2][1]);
}
