/* The same checksum under two names, one per file: only a whole-library
   build (LTO) can merge them. */
unsigned checksum_a(const unsigned char *p, unsigned long n) {
  unsigned a = 1, b = 0;
  for (unsigned long i = 0; i < n; i++) {
    a = (a + p[i]) % 65521u;
    b = (b + a) % 65521u;
    if (p[i] == 0x7f) b ^= a << 3;
  }
  return (b << 16) | a;
}
extern unsigned checksum_b(const unsigned char *p, unsigned long n);
unsigned both(const unsigned char *p, unsigned long n) { return checksum_a(p, n) ^ checksum_b(p, n + 1); }
