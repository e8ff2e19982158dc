#include "common.h"

size_t str_len(const char *s) {
  size_t n = 0;
  while (s[n])
    ++n;
  return n;
}

int is_space_c(char c) { return c == ' ' || c == '\t' || c == '\n'; }

int is_alpha_c(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static char lower_c(char c) { return (c >= 'A' && c <= 'Z') ? c + 32 : c; }
static char upper_c(char c) { return (c >= 'a' && c <= 'z') ? c - 32 : c; }

size_t count_words(const char *s) {
  size_t n = 0;
  int in_word = 0;
  for (; *s; ++s) {
    if (is_space_c(*s)) {
      in_word = 0;
    } else if (!in_word) {
      in_word = 1;
      ++n;
    }
  }
  return n;
}

static int is_vowel(char c) {
  c = lower_c(c);
  return c == 'a' || c == 'e' || c == 'i' || c == 'o' || c == 'u';
}

size_t count_vowels(const char *s) {
  size_t n = 0;
  for (; *s; ++s)
    n += is_alpha_c(*s) && is_vowel(*s);
  return n;
}

void str_upper(char *dst, const char *src, size_t n) {
  size_t i = 0;
  for (; src[i] && i + 1 < n; ++i)
    dst[i] = upper_c(src[i]);
  dst[i] = 0;
}

void str_reverse(char *s) {
  size_t n = str_len(s);
  for (size_t i = 0; i < n / 2; ++i) {
    char t = s[i];
    s[i] = s[n - 1 - i];
    s[n - 1 - i] = t;
  }
}

uint32_t str_hash(const char *s) {
  uint32_t h = 5381;
  for (; *s; ++s)
    h = h * 33u + (unsigned char)*s;
  return h;
}
