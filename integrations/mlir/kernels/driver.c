/* The C side of every lowered MLIR kernel (integrations/mlir/kernels): the
 * kernel's @run calls report() once per output checksum; they are printed
 * exactly (hex floats), so two builds compute the same results only if the
 * outputs match. */
#include <stdio.h>

void run(void);

void report(double checksum) { printf("%a\n", checksum); }

int main(void) {
  run();
  return 0;
}
