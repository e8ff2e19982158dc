/* A tiny stack-machine interpreter: a switch dispatch loop, recursion and
   calls through function pointers. A single-file program for
   tests/e2e/test_plugin_*.py. */
#include <stdint.h>
#include <stdio.h>

enum op { PUSH, ADD, SUB, MUL, DUP, SWAP, JNZ, DEC, PRINT, HALT };

typedef struct {
  enum op op;
  int64_t arg;
} insn;

typedef struct {
  int64_t stack[64];
  int sp;
  int64_t out;
} vm;

static void push(vm *m, int64_t v) { m->stack[m->sp++] = v; }
static int64_t pop(vm *m) { return m->stack[--m->sp]; }
static int64_t top(const vm *m) { return m->stack[m->sp - 1]; }

static int64_t run(const insn *code, vm *m) {
  int pc = 0;
  for (;;) {
    const insn *i = &code[pc++];
    switch (i->op) {
    case PUSH:
      push(m, i->arg);
      break;
    case ADD: {
      int64_t b = pop(m), a = pop(m);
      push(m, a + b);
      break;
    }
    case SUB: {
      int64_t b = pop(m), a = pop(m);
      push(m, a - b);
      break;
    }
    case MUL: {
      int64_t b = pop(m), a = pop(m);
      push(m, (a * b) % 1000003);
      break;
    }
    case DUP:
      push(m, top(m));
      break;
    case SWAP: {
      int64_t b = pop(m), a = pop(m);
      push(m, b);
      push(m, a);
      break;
    }
    case JNZ:
      if (top(m) != 0)
        pc = (int)i->arg;
      break;
    case DEC:
      push(m, pop(m) - 1);
      break;
    case PRINT:
      m->out = (m->out * 31 + top(m)) % 1000000007;
      break;
    case HALT:
      return m->out;
    }
  }
}

static int64_t fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

static int64_t square(int64_t x) { return x * x; }
static int64_t cube(int64_t x) { return x * x * x; }
static int64_t negate(int64_t x) { return -x; }

static int64_t fold(int64_t (*f)(int64_t), int n) {
  int64_t s = 0;
  for (int i = 1; i <= n; ++i)
    s += f(i);
  return s;
}

int main(void) {
  /* acc = 1; counter = 20; loop: acc = acc * 3 + counter; counter-- */
  static const insn prog[] = {
      {PUSH, 1}, {PUSH, 20},                  /* acc counter */
      {SWAP, 0}, {PUSH, 3},  {MUL, 0},        /* counter acc*3 */
      {SWAP, 0}, {DUP, 0},   {PUSH, 0},       /* acc*3 counter counter 0 */
      {ADD, 0},  {SWAP, 0},  {PRINT, 0},      /* ... */
      {SWAP, 0}, {DEC, 0},   {JNZ, 2},  {HALT, 0}};
  vm m = {{0}, 0, 0};
  printf("vm=%lld\n", (long long)run(prog, &m));
  printf("fib(24)=%lld\n", (long long)fib(24));
  int64_t (*fs[])(int64_t) = {square, cube, negate};
  for (int k = 0; k < 3; ++k)
    printf("fold%d=%lld\n", k, (long long)fold(fs[k], 200));
  return 0;
}
