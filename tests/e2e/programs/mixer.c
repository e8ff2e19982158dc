/* Twenty-four 64-bit lanes mixed together every round (a toy hash in the
 * style of ARX ciphers): more live values than x86-64 has registers, in
 * several functions, so the register allocator evicts a lot. */
#include <stdint.h>
#include <stdio.h>

#define ROTL(x, r) (((x) << (r)) | ((x) >> (64 - (r))))
#define MIX(a, b, c, r) \
  do {                  \
    a += b;             \
    c ^= a;             \
    c = ROTL(c, r);     \
  } while (0)

static uint64_t mix24(const uint64_t *in, int rounds) {
  uint64_t a0 = in[0], a1 = in[1], a2 = in[2], a3 = in[3], a4 = in[4], a5 = in[5];
  uint64_t b0 = in[6], b1 = in[7], b2 = in[8], b3 = in[9], b4 = in[10], b5 = in[11];
  uint64_t c0 = in[12], c1 = in[13], c2 = in[14], c3 = in[15], c4 = in[16], c5 = in[17];
  uint64_t d0 = in[18], d1 = in[19], d2 = in[20], d3 = in[21], d4 = in[22], d5 = in[23];
  for (int r = 0; r < rounds; ++r) {
    MIX(a0, b0, c0, 7);  MIX(a1, b1, c1, 9);  MIX(a2, b2, c2, 13);
    MIX(a3, b3, c3, 18); MIX(a4, b4, c4, 21); MIX(a5, b5, c5, 29);
    MIX(b0, c0, d0, 32); MIX(b1, c1, d1, 11); MIX(b2, c2, d2, 17);
    MIX(b3, c3, d3, 23); MIX(b4, c4, d4, 37); MIX(b5, c5, d5, 41);
    MIX(c0, d1, a2, 5);  MIX(c1, d2, a3, 43); MIX(c2, d3, a4, 47);
    MIX(c3, d4, a5, 53); MIX(c4, d5, a0, 59); MIX(c5, d0, a1, 3);
    MIX(d0, a3, b5, 19); MIX(d1, a4, b0, 27); MIX(d2, a5, b1, 31);
    MIX(d3, a0, b2, 33); MIX(d4, a1, b3, 39); MIX(d5, a2, b4, 45);
  }
  return a0 ^ a1 ^ a2 ^ a3 ^ a4 ^ a5 ^ ROTL(b0 ^ b1 ^ b2 ^ b3 ^ b4 ^ b5, 16) ^
         ROTL(c0 ^ c1 ^ c2 ^ c3 ^ c4 ^ c5, 32) ^ ROTL(d0 ^ d1 ^ d2 ^ d3 ^ d4 ^ d5, 48);
}

/* Same lanes, multiplied: different instructions, same pressure. */
static uint64_t mul24(const uint64_t *in, int rounds) {
  uint64_t x[24];
  for (int i = 0; i < 24; ++i)
    x[i] = in[i] | 1;
  uint64_t p0 = x[0], p1 = x[1], p2 = x[2], p3 = x[3], p4 = x[4], p5 = x[5];
  uint64_t p6 = x[6], p7 = x[7], p8 = x[8], p9 = x[9], p10 = x[10], p11 = x[11];
  uint64_t q0 = x[12], q1 = x[13], q2 = x[14], q3 = x[15], q4 = x[16], q5 = x[17];
  uint64_t q6 = x[18], q7 = x[19], q8 = x[20], q9 = x[21], q10 = x[22], q11 = x[23];
  for (int r = 0; r < rounds; ++r) {
    p0 = p0 * q11 + p1; p1 = p1 * q10 + p2; p2 = p2 * q9 + p3; p3 = p3 * q8 + p4;
    p4 = p4 * q7 + p5;  p5 = p5 * q6 + p6;  p6 = p6 * q5 + p7; p7 = p7 * q4 + p8;
    p8 = p8 * q3 + p9;  p9 = p9 * q2 + p10; p10 = p10 * q1 + p11; p11 = p11 * q0 + p0;
    q0 ^= p0 >> 7;  q1 ^= p1 >> 11; q2 ^= p2 >> 13; q3 ^= p3 >> 17;
    q4 ^= p4 >> 19; q5 ^= p5 >> 23; q6 ^= p6 >> 29; q7 ^= p7 >> 31;
    q8 ^= p8 >> 37; q9 ^= p9 >> 41; q10 ^= p10 >> 43; q11 ^= p11 >> 47;
  }
  return p0 + p1 + p2 + p3 + p4 + p5 + p6 + p7 + p8 + p9 + p10 + p11 +
         (q0 ^ q1 ^ q2 ^ q3 ^ q4 ^ q5 ^ q6 ^ q7 ^ q8 ^ q9 ^ q10 ^ q11);
}

int main(void) {
  uint64_t lanes[24];
  uint64_t seed = 0x9e3779b97f4a7c15u;
  for (int i = 0; i < 24; ++i) {
    seed ^= seed << 13;
    seed ^= seed >> 7;
    seed ^= seed << 17;
    lanes[i] = seed;
  }
  for (int rounds = 1; rounds <= 16; rounds *= 2) {
    uint64_t h = mix24(lanes, rounds);
    uint64_t m = mul24(lanes, rounds);
    printf("%2d %016llx %016llx\n", rounds, (unsigned long long)h, (unsigned long long)m);
    lanes[rounds % 24] ^= h + m;
  }
  return 0;
}
