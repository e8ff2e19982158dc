/* Integer and string loops: a checksum over a generated text with while
 * and do-while loops, a histogram, run-length encoding, and a loop written
 * by a macro (no pragma can go there). */
#include <stdio.h>
#include <string.h>

#define LEN 4000
#define CLEAR(a, n) for (int c_ = 0; c_ < (n); ++c_) (a)[c_] = 0

static char text[LEN + 1];
static unsigned hist[256];

static unsigned adler(const char *s, size_t n) {
  unsigned a = 1, b = 0;
  size_t i = 0;
  while (i < n) {
    a = (a + (unsigned char)s[i]) % 65521u;
    b = (b + a) % 65521u;
    ++i;
  }
  return (b << 16) | a;
}

static size_t rle(const char *s, size_t n, char *out) {
  size_t i = 0, o = 0;
  if (n == 0) return 0;
  do {
    size_t run = 1;
    while (i + run < n && s[i + run] == s[i] && run < 9) ++run;
    out[o++] = s[i];
    out[o++] = (char)('0' + run);
    i += run;
  } while (i < n);
  return o;
}

int main(void) {
  static char packed[2 * LEN];
  unsigned seed = 12345u, h = 0;
  size_t n, i;
  for (i = 0; i < LEN; ++i) {
    seed = seed * 1103515245u + 12345u;
    text[i] = (char)('a' + (seed >> 16) % 4);
  }
  text[LEN] = '\0';
  CLEAR(hist, 256);
  for (i = 0; i < strlen(text); ++i) hist[(unsigned char)text[i]]++;
  n = rle(text, LEN, packed);
  for (i = 0; i < 256; i++) if (hist[i]) h = h * 31u + hist[i]; else for (int k = 0; k < 2; k++) h ^= (unsigned)k;
  printf("%u %u %lu %u\n", adler(text, LEN), adler(packed, n), (unsigned long)n, h);
  return 0;
}
