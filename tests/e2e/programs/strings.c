/* String utilities called from a few places: a second inliner target. */
#include <stdio.h>

static int is_space(char c) { return c == ' ' || c == '\t' || c == '\n'; }
static int is_digit(char c) { return c >= '0' && c <= '9'; }
static char to_upper(char c) { return (c >= 'a' && c <= 'z') ? (char)(c - 32) : c; }

static int length(const char *s) {
  int n = 0;
  while (s[n])
    ++n;
  return n;
}

static int count_words(const char *s) {
  int words = 0, in_word = 0;
  for (; *s; ++s) {
    if (is_space(*s)) {
      in_word = 0;
    } else if (!in_word) {
      in_word = 1;
      ++words;
    }
  }
  return words;
}

static int sum_digits(const char *s) {
  int total = 0;
  for (; *s; ++s)
    if (is_digit(*s))
      total += *s - '0';
  return total;
}

static void upcase(char *dst, const char *src, int cap) {
  int i = 0;
  for (; src[i] && i + 1 < cap; ++i)
    dst[i] = to_upper(src[i]);
  dst[i] = '\0';
}

/* Too big to inline at -Oz when called from several places. */
static void report(const char *label, const char *s) {
  char buf[64];
  upcase(buf, s, (int)sizeof buf);
  printf("%s: len=%d\n", label, length(s));
  printf("%s: words=%d\n", label, count_words(s));
  printf("%s: digits=%d\n", label, sum_digits(s));
  printf("%s: upper=%s\n", label, buf);
}

int main(void) {
  report("fox", "the 3 quick brown foxes jumped over 12 lazy dogs");
  report("tabs", "a\tb\tc 7 8 9");
  report("empty", "");
  return 0;
}
