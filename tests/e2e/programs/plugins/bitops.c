/* Bit manipulation kernels: loops, small helpers, a table-driven CRC.
   A single-file program for tests/e2e/test_plugin_*.py. */
#include <stdint.h>
#include <stdio.h>

static unsigned popcount32(uint32_t x) {
  unsigned n = 0;
  while (x) {
    x &= x - 1;
    ++n;
  }
  return n;
}

static uint32_t rotl32(uint32_t x, unsigned r) {
  r &= 31;
  return r ? (x << r) | (x >> (32 - r)) : x;
}

static uint32_t reverse_bits(uint32_t x) {
  uint32_t r = 0;
  for (int i = 0; i < 32; ++i) {
    r = (r << 1) | (x & 1);
    x >>= 1;
  }
  return r;
}

static int clz32(uint32_t x) {
  if (!x)
    return 32;
  int n = 0;
  while (!(x & 0x80000000u)) {
    x <<= 1;
    ++n;
  }
  return n;
}

static uint32_t crc_table[256];

static void crc_init(void) {
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k)
      c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    crc_table[i] = c;
  }
}

static uint32_t crc32_buf(const unsigned char *p, size_t n) {
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i)
    c = crc_table[(c ^ p[i]) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

static uint32_t xorshift(uint32_t *s) {
  uint32_t x = *s;
  x ^= x << 13;
  x ^= x >> 17;
  x ^= x << 5;
  return *s = x;
}

static uint64_t gray_sum(unsigned n) {
  uint64_t s = 0;
  for (unsigned i = 0; i < n; ++i)
    s += i ^ (i >> 1);
  return s;
}

int main(void) {
  crc_init();
  unsigned char buf[512];
  uint32_t seed = 2463534242u;
  for (size_t i = 0; i < sizeof buf; ++i)
    buf[i] = (unsigned char)xorshift(&seed);
  printf("crc32=%08x\n", (unsigned)crc32_buf(buf, sizeof buf));
  uint64_t pc = 0, rv = 0, lz = 0, rot = 0;
  for (int i = 0; i < 2000; ++i) {
    uint32_t x = xorshift(&seed);
    pc += popcount32(x);
    rv ^= reverse_bits(x);
    lz += (uint64_t)clz32(x >> (i % 32));
    rot += rotl32(x, (unsigned)i);
  }
  printf("popcount=%llu reverse=%llu clz=%llu rot=%llu\n",
         (unsigned long long)pc, (unsigned long long)rv,
         (unsigned long long)lz, (unsigned long long)rot);
  printf("gray=%llu\n", (unsigned long long)gray_sum(100000));
  return 0;
}
