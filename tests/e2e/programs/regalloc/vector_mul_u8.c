/* A loop multiplying bytes, which x86 vectorizes as <16 x i8> multiplies:
   their lowering (punpcklbw / packuswb with an undef operand) leaves
   virtual registers with only undef uses, so empty live intervals, in the
   allocator's window (issue 34 item 5: LiveRange::overlaps read the first
   segment of an empty range). Prints a checksum. */
#include <stdio.h>

unsigned char a[1024], b[1024];

void mul(unsigned char *x, const unsigned char *y, int n) {
  for (int i = 0; i < n; i++)
    x[i] = x[i] * y[i];
}

int main(void) {
  for (int i = 0; i < 1024; i++) {
    a[i] = (unsigned char)(i * 7 + 3);
    b[i] = (unsigned char)(i ^ 0x5a);
  }
  mul(a, b, 1024);
  unsigned s = 0;
  for (int i = 0; i < 1024; i++)
    s = s * 31 + a[i];
  printf("%u\n", s);
  return 0;
}
