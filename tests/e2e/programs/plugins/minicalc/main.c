#include "common.h"

#include <stdio.h>

static const char *const texts[] = {
    "the quick brown fox jumps over the lazy dog",
    "  compilers  meet   machine learning ",
    "Phase ordering is a sequence of passes",
    "inline or not inline, that is the question",
};

static const char *const exprs[] = {
    "3 4 + 2 *", "100 7 % 5 -", "1 2 3 4 5 + + + +", "9 0 /", "2 3 4 * + 5 -",
};

static void text_report(void) {
  char buf[128];
  for (size_t i = 0; i < sizeof texts / sizeof *texts; ++i) {
    str_upper(buf, texts[i], sizeof buf);
    str_reverse(buf);
    printf("text %zu: words=%zu vowels=%zu len=%zu hash=%u rev=%s\n", i,
           count_words(texts[i]), count_vowels(texts[i]), str_len(texts[i]),
           (unsigned)str_hash(texts[i]), buf);
  }
}

static void vector_report(void) {
  vec v;
  vec_init(&v);
  int64_t x = 7;
  for (int i = 0; i < 1000; ++i) {
    x = (x * 48271) % 2147483647;
    if (vec_push(&v, x % 10007 - 5000))
      break;
  }
  printf("vec: n=%zu sum=%lld max=%lld median=%lld\n", v.size,
         (long long)vec_sum(&v), (long long)vec_max(&v),
         (long long)vec_median(&v));
  printf("vec: first=%lld last=%lld\n", (long long)v.data[0],
         (long long)v.data[v.size - 1]);
  vec_free(&v);
}

static void matrix_report(void) {
  mat a, b, c, t;
  mat_fill(&a, 1);
  mat_fill(&b, 2);
  mat_mul(&c, &a, &b);
  mat_transpose(&t, &c);
  printf("mat: trace(ab)=%lld det3(ab)=%lld trace(t)=%lld\n",
         (long long)mat_trace(&c), (long long)mat_det3(&c),
         (long long)mat_trace(&t));
  mat_identity(&b);
  for (int k = 0; k < 5; ++k)
    mat_mul(&b, &b, &a);
  printf("mat: trace(a^5)=%lld det3(a^5)=%lld\n", (long long)mat_trace(&b),
         (long long)mat_det3(&b));
}

static void rpn_report(void) {
  for (size_t i = 0; i < sizeof exprs / sizeof *exprs; ++i) {
    int64_t r = 0;
    if (rpn_eval(exprs[i], &r))
      printf("rpn %zu: error\n", i);
    else
      printf("rpn %zu: %lld\n", i, (long long)r);
  }
}

int main(void) {
  text_report();
  vector_report();
  matrix_report();
  rpn_report();
  return 0;
}
