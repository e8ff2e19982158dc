/* Register pressure for the -regalloc=mlbridge tests: more live integer and
 * floating-point values than registers across loops and calls (spills,
 * splits, evictions), copies to argument registers (hints), two register
 * classes (GPR, XMM). Prints checksums: every allocator must print the same. */
#include <stdio.h>

__attribute__((noinline)) long sink(long x) { return x * 7 + 1; }
__attribute__((noinline)) double dsink(double x) { return x * 0.5 + 1.0; }

__attribute__((noinline)) long gpr_pressure(const long *a, int n) {
  long s0 = 0, s1 = 1, s2 = 2, s3 = 3, s4 = 4, s5 = 5, s6 = 6, s7 = 7, s8 = 8;
  long s9 = 9, s10 = 10, s11 = 11, s12 = 12, s13 = 13, s14 = 14, s15 = 15, s16 = 16;
  for (int i = 0; i < n; i++) {
    s0 += a[i] * 3; s1 ^= a[i] + s0; s2 += s1 * a[i]; s3 -= s2 >> 1;
    s4 += s3 * 7; s5 ^= s4; s6 += s5 + a[i]; s7 *= s6 | 1; s8 += s7 >> 3;
    s9 ^= s8 * 5; s10 += s9; s11 -= s10 * 3; s12 ^= s11; s13 += s12 * a[i];
    s14 ^= s13; s15 += s14; s16 ^= s15 + s0;
    if (a[i] & 1)
      s3 += sink(s16); /* a call clobbers the caller-saved registers */
  }
  return s0 + s1 + s2 + s3 + s4 + s5 + s6 + s7 + s8 + s9 + s10 + s11 + s12 + s13 +
         s14 + s15 + s16;
}

__attribute__((noinline)) double xmm_pressure(const double *x, int n) {
  double a = 1, b = 2, c = 3, d = 4, e = 5, f = 6, g = 7, h = 8, i2 = 9, j = 10;
  double k = 11, l = 12, m = 13, o = 14, p = 15, q = 16, r = 17, s = 18;
  for (int i = 0; i < n; i++) {
    a += x[i]; b = b * 0.5 + a; c += b / x[i]; d -= c * 0.25; e += d * a; f += e;
    g -= f * 0.125; h += g; i2 += h * 0.5; j -= i2; k += j * 0.25; l += k; m -= l * 0.5;
    o += m; p += o * 0.125; q += p; r -= q * 0.5; s += r;
    if (i % 7 == 3)
      a = dsink(s);
  }
  return a + b + c + d + e + f + g + h + i2 + j + k + l + m + o + p + q + r + s;
}

__attribute__((noinline)) long mixed(const long *a, const double *x, int n) {
  long t0 = 1, t1 = 2, t2 = 3, t3 = 4, t4 = 5, t5 = 6, t6 = 7, t7 = 8;
  double u0 = 1, u1 = 2, u2 = 3, u3 = 4;
  for (int i = 0; i < n; i++) {
    t0 += a[i]; t1 ^= t0 << 1; t2 += t1 * 3; t3 -= t2; t4 += t3 ^ a[i];
    t5 += t4 >> 2; t6 ^= t5; t7 += t6 * 5;
    u0 += x[i] * (double)t7; u1 -= u0 * 0.5; u2 += u1; u3 = u3 * 0.75 + u2;
    t0 += sink(t7) + (long)u3;
  }
  return t0 + t1 + t2 + t3 + t4 + t5 + t6 + t7 + (long)(u0 + u1 + u2 + u3);
}

int main(void) {
  long a[200];
  double x[200];
  for (int i = 0; i < 200; i++) {
    a[i] = (i * 37) % 11 - 3;
    x[i] = 1.0 + (i % 7);
  }
  printf("%ld\n", gpr_pressure(a, 200));
  printf("%.9g\n", xmm_pressure(x, 200));
  printf("%ld\n", mixed(a, x, 200));
  return 0;
}
