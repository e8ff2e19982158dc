/* A loop leaving through asm goto (issue 34 item 4). INLINEASM_BR is no
   terminator: a copy of a live range out of the block put "before the
   terminators" lands after it, and the asm's indirect target reads the
   stale register. Many values live around the asm make the allocator split
   them there (the random policy's legal choices: -mlbridge-ra-policy=random,
   several seeds). Prints a checksum, the same at every -O and allocator. */
#include <stdio.h>
__attribute__((noinline)) long walk(const int *a, int n) {
  long s = 0, t = 1, u = 7, v = 3, w = 5, x = 11, p = 13, q = 17, r = 19, z = 23, m = 29, k = 31;
  for (int i = 0; i < n; i++) {
    int y = a[i];
    s += y * t;
    t = t * 3 + u;
    p += q ^ y;
    asm goto("testl %0, %0\n\tjs %l[negative]" : : "r"(y) : "cc" : negative);
    u += s ^ y;
    w = w * 5 + t;
    q = q * 3 + r;
    r ^= z + p;
    continue;
  negative:
    v = v * 7 + s + t;
    x ^= v + u + w;
    z = z * 9 + m;
    m += k ^ x;
    k = k * 5 + p + q + r;
  }
  return s + t + u + v + w + x + p + q + r + z + m + k;
}
int main(void) {
  int a[64];
  for (int i = 0; i < 64; i++)
    a[i] = (i * 37 % 11) - 4;
  printf("%ld\n", walk(a, 64));
  return 0;
}
