#include "common.h"

enum { STACK = 32 };

typedef struct {
  int64_t v[STACK];
  int n;
} stack;

static int push(stack *s, int64_t x) {
  if (s->n == STACK)
    return -1;
  s->v[s->n++] = x;
  return 0;
}

static int pop(stack *s, int64_t *x) {
  if (s->n == 0)
    return -1;
  *x = s->v[--s->n];
  return 0;
}

static int is_digit_c(char c) { return c >= '0' && c <= '9'; }

static int apply(stack *s, char op) {
  int64_t a, b;
  if (pop(s, &b) || pop(s, &a))
    return -1;
  switch (op) {
  case '+':
    return push(s, a + b);
  case '-':
    return push(s, a - b);
  case '*':
    return push(s, a * b);
  case '/':
    return b == 0 ? -1 : push(s, a / b);
  case '%':
    return b == 0 ? -1 : push(s, a % b);
  default:
    return -1;
  }
}

int rpn_eval(const char *expr, int64_t *result) {
  stack s;
  s.n = 0;
  const char *p = expr;
  while (*p) {
    if (is_space_c(*p)) {
      ++p;
    } else if (is_digit_c(*p)) {
      int64_t x = 0;
      while (is_digit_c(*p))
        x = x * 10 + (*p++ - '0');
      if (push(&s, x))
        return -1;
    } else {
      if (apply(&s, *p++))
        return -1;
    }
  }
  if (s.n != 1)
    return -1;
  return pop(&s, result);
}
