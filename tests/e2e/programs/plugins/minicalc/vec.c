#include "common.h"

#include <stdlib.h>

void vec_init(vec *v) {
  v->data = NULL;
  v->size = 0;
  v->cap = 0;
}

void vec_free(vec *v) {
  free(v->data);
  vec_init(v);
}

static size_t grow(size_t cap) { return cap < 8 ? 8 : cap * 2; }

int vec_push(vec *v, int64_t x) {
  if (v->size == v->cap) {
    size_t cap = grow(v->cap);
    int64_t *d = realloc(v->data, cap * sizeof *d);
    if (!d)
      return -1;
    v->data = d;
    v->cap = cap;
  }
  v->data[v->size++] = x;
  return 0;
}

int64_t vec_sum(const vec *v) {
  int64_t s = 0;
  for (size_t i = 0; i < v->size; ++i)
    s += v->data[i];
  return s;
}

static void swap64(int64_t *a, int64_t *b) {
  int64_t t = *a;
  *a = *b;
  *b = t;
}

static size_t partition(int64_t *a, size_t lo, size_t hi) {
  int64_t pivot = a[(lo + hi) / 2];
  size_t i = lo, j = hi;
  for (;;) {
    while (a[i] < pivot)
      ++i;
    while (a[j] > pivot)
      --j;
    if (i >= j)
      return j;
    swap64(&a[i], &a[j]);
    ++i;
    --j;
  }
}

static void quicksort(int64_t *a, size_t lo, size_t hi) {
  while (lo < hi) {
    size_t p = partition(a, lo, hi);
    if (p - lo < hi - p) {
      quicksort(a, lo, p);
      lo = p + 1;
    } else {
      quicksort(a, p + 1, hi);
      hi = p;
    }
  }
}

void vec_sort(vec *v) {
  if (v->size > 1)
    quicksort(v->data, 0, v->size - 1);
}

int64_t vec_median(vec *v) {
  if (v->size == 0)
    return 0;
  vec_sort(v);
  if (v->size % 2)
    return v->data[v->size / 2];
  return (v->data[v->size / 2 - 1] + v->data[v->size / 2]) / 2;
}

int64_t vec_max(const vec *v) {
  int64_t m = v->size ? v->data[0] : 0;
  for (size_t i = 1; i < v->size; ++i)
    if (v->data[i] > m)
      m = v->data[i];
  return m;
}
