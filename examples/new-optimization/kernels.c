#include <stdio.h>

static float a[256], b[256];

static float dot(int n) {
  float s = 0;
  for (int i = 0; i < n; ++i)
    s += a[i] * b[i];
  return s;
}

int main(void) {
  for (int i = 0; i < 256; ++i) {
    a[i] = (float)i / 7;
    b[i] = (float)(256 - i) / 3;
  }
  long h = 0;
  for (int n = 1; n <= 256; n += 17)
    h = h * 31 + (long)dot(n);
  printf("%ld\n", h);
  return 0;
}
