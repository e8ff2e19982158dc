/* Driver of the loop kernels: initialises the arrays deterministically,
 * calls the kernel named by argv[1] NTIMES times, then prints one FNV-1a
 * checksum per array (its exact bits), so outputs compare exactly across
 * compilers and policies. Link with -rdynamic: the kernel is found by name. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "loops.h"

#ifndef NTIMES
#define NTIMES 4
#endif

float a[LEN], b[LEN], c[LEN], d[LEN], e[LEN], f[LEN];
float aa[LEN2][LEN2], bb[LEN2][LEN2], cc[LEN2][LEN2];
int ip[LEN], ic[LEN], ia[LEN], ib[LEN];
float res[4];
int ires[4];

static void init(void) {
  for (int i = 0; i < LEN; i++) {
    a[i] = (float)(i % 17 + 1) / 32.0f;
    b[i] = (float)(i % 13 + 3) / 16.0f;
    c[i] = (float)((i * 7) % 11 + 1) / 64.0f;
    d[i] = (float)((i * 5) % 19) / 32.0f - 0.25f;
    e[i] = (float)(i % 7 + 1) / 8.0f;
    f[i] = 0.0f;
    ip[i] = (i * 37 + 11) % LEN; /* 37 is odd: a permutation of 0..LEN-1 */
    ic[i] = (i * 5 + 3) % LEN2;
    ia[i] = (i * 13) % 101 - 50;
    ib[i] = i % 9 + 1;
  }
  for (int i = 0; i < LEN2; i++)
    for (int j = 0; j < LEN2; j++) {
      aa[i][j] = (float)((i + 2 * j) % 23 + 1) / 64.0f;
      bb[i][j] = (float)((3 * i + j) % 29 + 1) / 64.0f;
      cc[i][j] = (float)((i * j) % 31) / 128.0f;
    }
}

static uint64_t fnv(const void *p, size_t n) {
  const unsigned char *s = p;
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 1099511628211ull;
  return h;
}

#define SUM(x) printf("%-4s %016llx\n", #x, (unsigned long long)fnv(x, sizeof x))

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s KERNEL\n", argv[0]);
    return 2;
  }
  void (*kernel)(void);
  void *sym = dlsym(RTLD_DEFAULT, argv[1]);
  if (!sym) {
    fprintf(stderr, "no kernel named %s in this binary\n", argv[1]);
    return 2;
  }
  memcpy(&kernel, &sym, sizeof kernel);
  init();
  for (int r = 0; r < NTIMES; r++) kernel();
  SUM(a); SUM(b); SUM(c); SUM(d); SUM(e); SUM(f);
  SUM(aa); SUM(bb); SUM(cc);
  SUM(ip); SUM(ic); SUM(ia); SUM(ib);
  SUM(res); SUM(ires);
  return 0;
}
