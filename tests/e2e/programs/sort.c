/* A tiny insertion sort and statistics over an array. */
#include <stdio.h>

static int less(int a, int b) { return a < b; }
static void swap(int *a, int *b) {
  int t = *a;
  *a = *b;
  *b = t;
}

static void insertion_sort(int *xs, int n) {
  for (int i = 1; i < n; ++i)
    for (int j = i; j > 0 && less(xs[j], xs[j - 1]); --j)
      swap(&xs[j], &xs[j - 1]);
}

static int min_of(const int *xs, int n) {
  int m = xs[0];
  for (int i = 1; i < n; ++i)
    if (less(xs[i], m))
      m = xs[i];
  return m;
}

static int max_of(const int *xs, int n) {
  int m = xs[0];
  for (int i = 1; i < n; ++i)
    if (less(m, xs[i]))
      m = xs[i];
  return m;
}

static long sum_of(const int *xs, int n) {
  long s = 0;
  for (int i = 0; i < n; ++i)
    s += xs[i];
  return s;
}

static unsigned next_rand(unsigned *state) {
  *state = *state * 1103515245u + 12345u;
  return (*state >> 16) & 0x7fff;
}

int main(void) {
  int xs[32];
  unsigned state = 42;
  for (int i = 0; i < 32; ++i)
    xs[i] = (int)(next_rand(&state) % 1000);
  insertion_sort(xs, 32);
  printf("min=%d max=%d sum=%ld median=%d\n", min_of(xs, 32), max_of(xs, 32),
         sum_of(xs, 32), xs[16]);
  return 0;
}
