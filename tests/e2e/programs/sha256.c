/* SHA-256 (FIPS 180-4) of a few messages, fully unrolled rounds: a real
 * workload with many simultaneously live 32-bit values, so the register
 * allocator has eviction decisions to make. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1,
    0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
    0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
    0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
    0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
    0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
    0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
    0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

#define ROTR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))
#define CH(x, y, z) (((x) & (y)) ^ (~(x) & (z)))
#define MAJ(x, y, z) (((x) & (y)) ^ ((x) & (z)) ^ ((y) & (z)))
#define S0(x) (ROTR(x, 2) ^ ROTR(x, 13) ^ ROTR(x, 22))
#define S1(x) (ROTR(x, 6) ^ ROTR(x, 11) ^ ROTR(x, 25))
#define G0(x) (ROTR(x, 7) ^ ROTR(x, 18) ^ ((x) >> 3))
#define G1(x) (ROTR(x, 17) ^ ROTR(x, 19) ^ ((x) >> 10))

/* One round; the eight working variables rotate by renaming. */
#define ROUND(a, b, c, d, e, f, g, h, i)                                       \
  do {                                                                         \
    uint32_t t1 = h + S1(e) + CH(e, f, g) + K[i] + w[i];                       \
    uint32_t t2 = S0(a) + MAJ(a, b, c);                                        \
    d += t1;                                                                   \
    h = t1 + t2;                                                               \
  } while (0)

#define ROUND8(i)                                                              \
  ROUND(a, b, c, d, e, f, g, h, i + 0);                                        \
  ROUND(h, a, b, c, d, e, f, g, i + 1);                                        \
  ROUND(g, h, a, b, c, d, e, f, i + 2);                                        \
  ROUND(f, g, h, a, b, c, d, e, i + 3);                                        \
  ROUND(e, f, g, h, a, b, c, d, i + 4);                                        \
  ROUND(d, e, f, g, h, a, b, c, i + 5);                                        \
  ROUND(c, d, e, f, g, h, a, b, i + 6);                                        \
  ROUND(b, c, d, e, f, g, h, a, i + 7)

static void compress(uint32_t state[8], const uint8_t block[64]) {
  uint32_t w[64];
  for (int i = 0; i < 16; ++i)
    w[i] = (uint32_t)block[4 * i] << 24 | (uint32_t)block[4 * i + 1] << 16 |
           (uint32_t)block[4 * i + 2] << 8 | (uint32_t)block[4 * i + 3];
  for (int i = 16; i < 64; ++i)
    w[i] = G1(w[i - 2]) + w[i - 7] + G0(w[i - 15]) + w[i - 16];
  uint32_t a = state[0], b = state[1], c = state[2], d = state[3];
  uint32_t e = state[4], f = state[5], g = state[6], h = state[7];
  ROUND8(0); ROUND8(8); ROUND8(16); ROUND8(24);
  ROUND8(32); ROUND8(40); ROUND8(48); ROUND8(56);
  state[0] += a; state[1] += b; state[2] += c; state[3] += d;
  state[4] += e; state[5] += f; state[6] += g; state[7] += h;
}

static void sha256(const uint8_t *msg, size_t len, uint8_t out[32]) {
  uint32_t state[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                       0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  uint8_t block[64];
  size_t done = 0;
  while (len - done >= 64) {
    compress(state, msg + done);
    done += 64;
  }
  size_t rest = len - done;
  memset(block, 0, sizeof block);
  memcpy(block, msg + done, rest);
  block[rest] = 0x80;
  if (rest >= 56) {
    compress(state, block);
    memset(block, 0, sizeof block);
  }
  uint64_t bits = (uint64_t)len * 8;
  for (int i = 0; i < 8; ++i)
    block[63 - i] = (uint8_t)(bits >> (8 * i));
  compress(state, block);
  for (int i = 0; i < 8; ++i) {
    out[4 * i] = (uint8_t)(state[i] >> 24);
    out[4 * i + 1] = (uint8_t)(state[i] >> 16);
    out[4 * i + 2] = (uint8_t)(state[i] >> 8);
    out[4 * i + 3] = (uint8_t)state[i];
  }
}

int main(void) {
  static const char *messages[] = {
      "", "abc", "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
      "The quick brown fox jumps over the lazy dog"};
  uint8_t buf[1000];
  uint8_t digest[32];
  for (size_t m = 0; m < sizeof messages / sizeof *messages; ++m) {
    sha256((const uint8_t *)messages[m], strlen(messages[m]), digest);
    for (int i = 0; i < 32; ++i)
      printf("%02x", digest[i]);
    printf("\n");
  }
  for (size_t i = 0; i < sizeof buf; ++i)
    buf[i] = (uint8_t)(i * 131 + 7);
  for (int round = 0; round < 3; ++round) {
    sha256(buf, sizeof buf - round * 100, digest);
    memcpy(buf, digest, sizeof digest);
  }
  for (int i = 0; i < 32; ++i)
    printf("%02x", digest[i]);
  printf("\n");
  return 0;
}
