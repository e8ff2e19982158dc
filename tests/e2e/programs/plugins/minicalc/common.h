/* minicalc: a small multi-file C program for the LLVM plugin tests
 * (tests/e2e/test_plugin_*.py). Built with make -j2 and
 * clang-19 -fpass-plugin=...; its output must not depend on how it was
 * optimized. Many small functions across files: plenty of inlining
 * decisions. */
#ifndef MINICALC_COMMON_H
#define MINICALC_COMMON_H

#include <stddef.h>
#include <stdint.h>

/* vec.c: a growable vector of int64 */
typedef struct {
  int64_t *data;
  size_t size, cap;
} vec;
void vec_init(vec *v);
void vec_free(vec *v);
int vec_push(vec *v, int64_t x);
int64_t vec_sum(const vec *v);
void vec_sort(vec *v);
int64_t vec_median(vec *v);
int64_t vec_max(const vec *v);

/* strutil.c: text helpers */
size_t str_len(const char *s);
int is_space_c(char c);
int is_alpha_c(char c);
size_t count_words(const char *s);
size_t count_vowels(const char *s);
void str_upper(char *dst, const char *src, size_t n);
void str_reverse(char *s);
uint32_t str_hash(const char *s);

/* matrix.c: fixed-size integer matrices */
#define MDIM 4
typedef struct {
  int64_t m[MDIM][MDIM];
} mat;
void mat_identity(mat *a);
void mat_fill(mat *a, int64_t seed);
void mat_mul(mat *out, const mat *a, const mat *b);
void mat_transpose(mat *out, const mat *a);
int64_t mat_trace(const mat *a);
int64_t mat_det3(const mat *a);

/* rpn.c: a reverse-Polish calculator */
int rpn_eval(const char *expr, int64_t *result);

#endif
