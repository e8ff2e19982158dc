/* Stencils and reductions on floats: 2-D Jacobi sweeps, a 1-D convolution
 * with a short filter, and a dot product with a single-precision sum. */
#include <stdio.h>

#define W 64
#define H 40
#define T 5

static float grid[H][W], next[H][W];
static double signal[1000], out[1000];
static const double taps[5] = {0.1, 0.2, 0.4, 0.2, 0.1};

int main(void) {
  float dot = 0.0f;
  double conv = 0.0;
  for (int i = 0; i < H; ++i)
    for (int j = 0; j < W; ++j) grid[i][j] = next[i][j] = (float)((i * j) % 17) / 17.0f;
  for (int t = 0; t < T; ++t) {
    for (int i = 1; i < H - 1; ++i)
      for (int j = 1; j < W - 1; ++j)
        next[i][j] = 0.25f * (grid[i - 1][j] + grid[i + 1][j] + grid[i][j - 1] + grid[i][j + 1]);
    for (int i = 1; i < H - 1; ++i)
      for (int j = 1; j < W - 1; ++j) grid[i][j] = next[i][j];
  }
  for (int i = 0; i < 1000; ++i) signal[i] = (double)((i * 37) % 101) / 101.0;
  for (int i = 2; i < 998; ++i) {
    double acc = 0.0;
    for (int k = 0; k < 5; ++k) acc += taps[k] * signal[i + k - 2];
    out[i] = acc;
  }
  for (int i = 0; i < 1000; ++i) conv += out[i];
  for (int i = 0; i < H; ++i)
    for (int j = 0; j < W; ++j) dot += grid[i][j] * grid[H - 1 - i][j];
  printf("%a %a\n", (double)dot, conv);
  return 0;
}
