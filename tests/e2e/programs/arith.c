/* Small arithmetic helpers with many call sites: a target for the inliner. */
#include <stdio.h>

static int square(int x) { return x * x; }
static int cube(int x) { return square(x) * x; }
static int add3(int a, int b, int c) { return a + b + c; }

static int clamp(int v, int lo, int hi) {
  if (v < lo)
    return lo;
  if (v > hi)
    return hi;
  return v;
}

static int poly(int x) { return add3(cube(x), 3 * square(x), clamp(x, -5, 5)); }

static unsigned mix(unsigned h, unsigned v) {
  h ^= v + 0x9e3779b9u + (h << 6) + (h >> 2);
  return h;
}

static unsigned checksum(const int *xs, int n) {
  unsigned h = 17;
  for (int i = 0; i < n; ++i)
    h = mix(h, (unsigned)xs[i]);
  return h;
}

int main(void) {
  int values[16];
  for (int i = 0; i < 16; ++i)
    values[i] = poly(i - 8) + clamp(square(i), 0, 100);
  printf("checksum=%u poly(3)=%d\n", checksum(values, 16), poly(3));
  return 0;
}
