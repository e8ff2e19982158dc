/* Six functions with one similar region each, which differ in a constant
 * that must stay an immediate: llvm.ctlz's is_zero_poison flag (true for
 * __builtin_clz, false for the guarded form). LLVM's IR outliner (19 and
 * 22, -mllvm -ir-outliner) turns that flag into an argument of the
 * outlined function: invalid IR, which clang-22 then miscompiles (main's
 * output differs from -O0's). */
#include <stdio.h>

#define BODY(CLZ)                                                             \
  unsigned a = p[0] * 7u + x;                                                 \
  unsigned b = p[1] ^ (a << 3);                                               \
  unsigned c = p[2] + b * 5u;                                                 \
  unsigned d = CLZ;                                                           \
  unsigned e = (d * 13u) ^ c;                                                 \
  p[3] = e + a;                                                               \
  p[4] = e - b;                                                               \
  p[5] = c * e;                                                               \
  p[6] = a ^ d;                                                               \
  return e + p[7] * 3u;
#define POISON_AT_ZERO(v) __builtin_clz(v)
#define DEFINED_AT_ZERO(v) ((v) ? __builtin_clz(v) : 32u)

unsigned f0(unsigned x, unsigned *p) { BODY(POISON_AT_ZERO(c)) }
unsigned f1(unsigned x, unsigned *p) { BODY(DEFINED_AT_ZERO(c)) }
unsigned f2(unsigned x, unsigned *p) { BODY(POISON_AT_ZERO(c)) }
unsigned f3(unsigned x, unsigned *p) { BODY(DEFINED_AT_ZERO(c)) }
unsigned f4(unsigned x, unsigned *p) { BODY(POISON_AT_ZERO(c | 1)) }
unsigned f5(unsigned x, unsigned *p) { BODY(DEFINED_AT_ZERO(c | 2)) }

int main(void) {
  unsigned (*fs[])(unsigned, unsigned *) = {f0, f1, f2, f3, f4, f5};
  for (unsigned i = 0; i < 6; ++i) {
    /* c == 0 where clz is defined at 0 (f1, f3, f5 guard it), else 1 */
    unsigned p[8] = {0, 0, i % 2 ? 0u : 1u, 0, 0, 0, 0, i};
    unsigned r = fs[i](0, p);
    printf("%u %u %u\n", r, p[5], p[6]);
  }
  return 0;
}
