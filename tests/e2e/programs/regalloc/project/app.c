/* A tiny project (app.c, mix.c, add3.S) built with the register allocator
   selected by the environment (docs/register-allocation.md, "In a build").
   Prints a checksum. */
#include <stdio.h>

long mix(long a, long b);

int main(void) {
  long s = 1;
  for (int i = 0; i < 1000; i++)
    s = mix(s, i);
  printf("%ld\n", s);
  return 0;
}
