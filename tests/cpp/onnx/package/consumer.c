/* Built against the installed package: the C API on the MLP. */
#include <mlbridge/c/onnx.h>

#include <stdio.h>

int main(int argc, char **argv) {
  float x[300], y[15];
  size_t i, n = 0;
  if (argc != 2)
    return 2;
  for (i = 0; i < 300; ++i)
    x[i] = 0.5f;
  if (mlb_onnx_run_float(argv[1], NULL, x, 300, y, 15, &n) != MLB_OK || n != 15) {
    fprintf(stderr, "%s\n", mlb_last_error());
    return 3;
  }
  printf("onnx c consumer ok: %g\n", (double)y[0]);
  return 0;
}
