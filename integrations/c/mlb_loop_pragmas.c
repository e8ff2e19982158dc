/* mlb-loop-pragmas: a C source-to-source optimizer that asks a model, for
 * every loop of a C file, which `#pragma clang loop` hint to put in front
 * of it (docs/c-tool.md). Written in C99 on libclang's C API and
 * ML-Compiler-Bridge's C API: a non-LLVM-pass, C-language consumer of the
 * bridge.
 *
 *   mlb-loop-pragmas [runner options] -o out.c in.c [-- clang args]
 *
 * The model is reached over named pipes (--channel), gRPC (--server) or
 * in-process ONNX Runtime (--model). When no model is given, or it fails
 * (missing FIFO or file, timeout, dead peer, bad answer), the loop gets no
 * pragma and neither do the later ones: the output is then the input
 * unchanged for those loops, and the tool still succeeds. */
#define _POSIX_C_SOURCE 200809L

#include "mlbridge/c/mlbridge.h"
#include "mlbridge/c/rl.h"
#include "mlbridge/c/settings.h"
#if MLBRIDGE_INTEGRATION_HAVE_GRPC
#include "mlbridge/c/grpc.h"
#endif
#if MLBRIDGE_INTEGRATION_HAVE_ONNX
#include "mlbridge/c/onnx.h"
#endif

#include <clang-c/Index.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TOOL "mlb-loop-pragmas"

/* ---- features and actions (mirrored by mlbridge.c_tool in Python) -------- */

enum {
  F_DEPTH,       /* enclosing loops */
  F_TRIP_COUNT,  /* constant trip count of `for (i = a; i < b; ++i)`, else -1 */
  F_BODY_STMTS,  /* statements and expressions in the body */
  F_CALLS,       /* calls in the body */
  F_ARRAY_REFS,  /* array subscripts in the body */
  F_FLOAT_OPS,   /* arithmetic on floating-point values in the body */
  F_INNERMOST,   /* 1 if no loop is nested inside */
  F_LOOP_KIND,   /* 0 for, 1 while, 2 do */
  F_COUNT
};
static const char *const feature_names[F_COUNT] = {
    "depth",     "trip_count", "body_stmts", "calls",
    "array_refs", "float_ops", "innermost",  "loop_kind"};

/* Action 0 (no pragma) is also the fallback. */
static const char *const action_pragmas[] = {
    NULL,
    "#pragma clang loop unroll_count(2)",
    "#pragma clang loop unroll_count(4)",
    "#pragma clang loop unroll_count(8)",
    "#pragma clang loop vectorize_width(2) interleave_count(1)",
    "#pragma clang loop vectorize_width(4) interleave_count(2)",
    "#pragma clang loop vectorize(disable) unroll(disable)"};
#define ACTION_COUNT ((int)(sizeof action_pragmas / sizeof action_pragmas[0]))

/* ---- settings -------------------------------------------------------------- */

typedef struct settings {
  mlb_runner_settings runner; /* --runner, --channel, --format, --server,
                                 --model, --timeout-ms (mlbridge/c/settings.h) */
  const char *log, *input, *output;
  int clang_argc;
  const char *const *clang_argv;
} settings;

static void usage(FILE *to) {
  fprintf(to,
          "usage: " TOOL " [--runner auto|pipe|grpc|onnx|none] [--channel BASE]\n"
          "         [--format bitstream|json] [--server HOST:PORT] [--model FILE.onnx]\n"
          "         [--timeout-ms N] [--log FILE] -o OUT.c IN.c [-- CLANG_ARGS...]\n"
          "Puts a `#pragma clang loop` hint, chosen by a model, before every loop\n"
          "of IN.c. auto: pipe if --channel, grpc if --server, onnx if --model,\n"
          "else none (no pragmas). Without a usable model no pragma is added.\n");
}

static int parse_args(int argc, char **argv, settings *s) {
  int i;
  memset(s, 0, sizeof *s);
  mlb_runner_settings_init(&s->runner);
  s->runner.timeout_ms = 10000;
  s->runner.advice = "pragma_action";
#if MLBRIDGE_INTEGRATION_HAVE_GRPC
  s->runner.grpc = mlb_grpc_runner_from_settings;
#endif
#if MLBRIDGE_INTEGRATION_HAVE_ONNX
  s->runner.onnx = mlb_onnx_runner_from_settings;
#endif
  for (i = 1; i < argc; ++i) {
    const char *a = argv[i];
    const char **slot = NULL;
    if (strcmp(a, "--") == 0) {
      s->clang_argc = argc - i - 1;
      s->clang_argv = (const char *const *)argv + i + 1;
      break;
    }
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      usage(stdout);
      return 1;
    }
    if (strcmp(a, "--log") == 0) slot = &s->log;
    else if (strcmp(a, "-o") == 0) slot = &s->output;
    else if (strncmp(a, "--", 2) == 0) {
      mlb_status st;
      if (i + 1 >= argc) goto missing;
      st = mlb_runner_settings_set(&s->runner, a + 2, argv[i + 1]);
      if (st == MLB_ERR_NOT_FOUND) {
        fprintf(stderr, TOOL ": unknown option '%s'\n", a);
        usage(stderr);
        return 2;
      }
      if (st != MLB_OK && strcmp(a, "--runner") == 0) {
        /* Like the plugins: an unknown runner means no model, not no run. */
        fprintf(stderr, TOOL ": warning: %s; no pragmas\n", mlb_last_error());
        s->runner.kind = MLB_RUNNER_DEFAULT;
      } else if (st != MLB_OK) {
        fprintf(stderr, TOOL ": %s: %s\n", a, mlb_last_error());
        return 2;
      }
      ++i;
      continue;
    } else if (a[0] == '-') {
      fprintf(stderr, TOOL ": unknown option '%s'\n", a);
      usage(stderr);
      return 2;
    } else if (!s->input) {
      s->input = a;
      continue;
    } else {
      fprintf(stderr, TOOL ": more than one input file ('%s', '%s')\n", s->input, a);
      return 2;
    }
    if (i + 1 >= argc) goto missing;
    *slot = argv[++i];
  }
  if (!s->input || !s->output) {
    usage(stderr);
    return 2;
  }
  return 0;
missing:
  fprintf(stderr, TOOL ": option '%s' needs a value\n", argv[i]);
  return 2;
}

/* ---- the model --------------------------------------------------------------- */

typedef struct model {
  mlb_runner *runner;   /* NULL: no model (or it failed); no more pragmas */
  mlb_runner_kind kind; /* the runner chosen; MLB_RUNNER_DEFAULT: none */
  int asked, fallbacks;
} model;

static void model_failed(model *m, const char *what) {
  fprintf(stderr, TOOL ": warning: the model (%s) failed: %s: %s; no more pragmas\n",
          mlb_runner_kind_name(m->kind), what, mlb_last_error());
  mlb_runner_destroy(m->runner);
  m->runner = NULL;
  ++m->fallbacks;
}

static void model_open(model *m, const settings *s) {
  memset(m, 0, sizeof *m);
  if (mlb_runner_create_from_settings(&s->runner, &m->kind, &m->runner) != MLB_OK) {
    fprintf(stderr, TOOL ": warning: cannot use the model (%s): %s; no pragmas\n",
            mlb_runner_kind_name(m->kind), mlb_last_error());
    m->kind = MLB_RUNNER_DEFAULT;
  }
}

/* The action for one loop: the model's answer, 0 (no pragma) if it fails. */
static int model_ask(model *m, const int64_t *features) {
  int i;
  int64_t action = 0;
  if (!m->runner) return 0;
  ++m->asked;
  for (i = 0; i < F_COUNT; ++i) {
    /* An ONNX model takes float inputs; a pipe or gRPC peer gets int64. */
    mlb_status st = m->kind == MLB_RUNNER_ONNX
                        ? mlb_set_float(m->runner, feature_names[i], (float)features[i])
                        : mlb_set_int64(m->runner, feature_names[i], features[i]);
    if (st != MLB_OK) {
      model_failed(m, feature_names[i]);
      return 0;
    }
  }
  if (mlb_evaluate_action(m->runner, ACTION_COUNT, &action) != MLB_OK) {
    model_failed(m, "evaluate");
    return 0;
  }
  return (int)action;
}

/* ---- the loops ------------------------------------------------------------------ */

typedef struct insertion {
  unsigned offset; /* byte offset in the input where the text goes */
  int action;
  int own_line;    /* the loop starts its line: the pragma goes on the line before */
  unsigned indent; /* length of the line's leading whitespace (own_line) */
} insertion;

typedef struct walk {
  model *model;
  CXFile file;
  CXTranslationUnit tu;
  const char *source;
  size_t source_len;
  insertion *edits;
  size_t edit_count, edit_cap;
  int *actions; /* every loop's answer, in source order */
  int *applied; /* what was written (actions after the safety rule) */
  size_t action_count, applied_count;
  int depth;
  int oom;
} walk;

typedef struct children {
  CXCursor c[4];
  int n;
} children;

static enum CXChildVisitResult collect(CXCursor c, CXCursor parent, CXClientData data) {
  children *ch = (children *)data;
  (void)parent;
  if (ch->n < 4) ch->c[ch->n] = c;
  ++ch->n;
  return CXChildVisit_Continue;
}

typedef struct body_stats {
  int64_t stmts, calls, array_refs, float_ops, loops;
  int64_t float_scalar_writes; /* possible floating-point reductions */
} body_stats;

static int is_loop(enum CXCursorKind k) {
  return k == CXCursor_ForStmt || k == CXCursor_WhileStmt || k == CXCursor_DoStmt;
}

static enum CXChildVisitResult count_body(CXCursor c, CXCursor parent, CXClientData data) {
  body_stats *b = (body_stats *)data;
  enum CXCursorKind k = clang_getCursorKind(c);
  (void)parent;
  if (clang_isStatement(k) || clang_isExpression(k)) ++b->stmts;
  if (k == CXCursor_CallExpr) ++b->calls;
  if (k == CXCursor_ArraySubscriptExpr) ++b->array_refs;
  if (is_loop(k)) ++b->loops;
  if (k == CXCursor_BinaryOperator || k == CXCursor_CompoundAssignOperator) {
    enum CXTypeKind t = clang_getCanonicalType(clang_getCursorType(c)).kind;
    if (t == CXType_Float || t == CXType_Double || t == CXType_LongDouble) {
      ++b->float_ops;
      if (k == CXCursor_CompoundAssignOperator ||
          clang_getCursorBinaryOperatorKind(c) == CXBinaryOperator_Assign) {
        children lhs = {{{0}}, 0};
        clang_visitChildren(c, collect, &lhs);
        if (lhs.n == 2 && clang_getCursorKind(lhs.c[0]) == CXCursor_DeclRefExpr)
          ++b->float_scalar_writes;
      }
    }
  }
  return CXChildVisit_Recurse;
}

/* The integer value of an expression if it is a constant, else fails. */
static int constant_of(CXCursor c, long long *out) {
  CXEvalResult r = clang_Cursor_Evaluate(c);
  int ok = 0;
  if (r) {
    if (clang_EvalResult_getKind(r) == CXEval_Int) {
      *out = clang_EvalResult_getAsLongLong(r);
      ok = 1;
    }
    clang_EvalResult_dispose(r);
  }
  return ok;
}

/* `for (int i = A; i < B; ++i)` (or i <= B, i++ / i += 1) with constant A, B. */
static int64_t trip_count(CXCursor loop) {
  children ch = {{{0}}, 0};
  children init = {{{0}}, 0}, cond = {{{0}}, 0};
  long long lo, hi;
  enum CXBinaryOperatorKind op;
  clang_visitChildren(loop, collect, &ch);
  if (ch.n != 4) return -1; /* a part of the header is missing */
  if (clang_getCursorKind(ch.c[0]) == CXCursor_DeclStmt) {
    children var = {{{0}}, 0};
    clang_visitChildren(ch.c[0], collect, &var);
    if (var.n != 1) return -1;
    clang_visitChildren(var.c[0], collect, &init);
    if (init.n < 1 || !constant_of(init.c[init.n - 1], &lo)) return -1;
  } else if (clang_getCursorKind(ch.c[0]) == CXCursor_BinaryOperator) {
    clang_visitChildren(ch.c[0], collect, &init);
    if (init.n != 2 || !constant_of(init.c[1], &lo)) return -1;
  } else {
    return -1;
  }
  if (clang_getCursorKind(ch.c[1]) != CXCursor_BinaryOperator) return -1;
  op = clang_getCursorBinaryOperatorKind(ch.c[1]);
  clang_visitChildren(ch.c[1], collect, &cond);
  if (cond.n != 2 || !constant_of(cond.c[1], &hi)) return -1;
  if (op == CXBinaryOperator_LE) ++hi;
  else if (op != CXBinaryOperator_LT) return -1;
  if (clang_getCursorKind(ch.c[2]) != CXCursor_UnaryOperator &&
      clang_getCursorKind(ch.c[2]) != CXCursor_CompoundAssignOperator)
    return -1;
  return hi > lo ? (int64_t)(hi - lo) : 0;
}

static int push_edit(walk *w, insertion e) {
  if (w->edit_count == w->edit_cap) {
    size_t cap = w->edit_cap ? 2 * w->edit_cap : 32;
    insertion *p = (insertion *)realloc(w->edits, cap * sizeof *p);
    if (!p) return 0;
    w->edits = p;
    w->edit_cap = cap;
  }
  w->edits[w->edit_count++] = e;
  return 1;
}

/* Appends v to the array *a of *n ints. */
static int push_int(int **a, size_t *n, int v) {
  int *p = (int *)realloc(*a, (*n + 1) * sizeof *p);
  if (!p) return 0;
  *a = p;
  p[(*n)++] = v;
  return 1;
}

static int action_vectorizes(int action) {
  return action_pragmas[action] && strstr(action_pragmas[action], "vectorize_width") != NULL;
}

static enum CXChildVisitResult visit(CXCursor c, CXCursor parent, CXClientData data);

static void visit_loop(walk *w, CXCursor c) {
  CXSourceLocation loc = clang_getCursorLocation(c);
  CXFile file;
  unsigned line, column, offset, start;
  body_stats b = {0, 0, 0, 0, 0, 0};
  int64_t f[F_COUNT];
  int action;
  enum CXCursorKind k = clang_getCursorKind(c);

  clang_getSpellingLocation(loc, &file, &line, &column, &offset);
  clang_visitChildren(c, count_body, &b);
  f[F_DEPTH] = w->depth;
  f[F_TRIP_COUNT] = k == CXCursor_ForStmt ? trip_count(c) : -1;
  f[F_BODY_STMTS] = b.stmts;
  f[F_CALLS] = b.calls;
  f[F_ARRAY_REFS] = b.array_refs;
  f[F_FLOAT_OPS] = b.float_ops;
  f[F_INNERMOST] = b.loops == 0;
  f[F_LOOP_KIND] = k == CXCursor_ForStmt ? 0 : k == CXCursor_WhileStmt ? 1 : 2;
  action = model_ask(w->model, f);
  if (!push_int(&w->actions, &w->action_count, action)) w->oom = 1;
  /* A vectorize pragma lets LLVM reorder floating-point reductions, which
   * changes results: never on a loop that may accumulate into a float. */
  if (action_vectorizes(action) && b.float_scalar_writes > 0) action = 0;
  if (!push_int(&w->applied, &w->applied_count, action)) w->oom = 1;
  if (action != 0) {
    insertion e;
    /* From the start of the line: is the loop the first thing on it? */
    start = offset;
    while (start > 0 && w->source[start - 1] != '\n') --start;
    e.offset = offset;
    e.action = action;
    e.own_line = 1;
    e.indent = 0;
    for (; start + e.indent < offset; ++e.indent)
      if (w->source[start + e.indent] != ' ' && w->source[start + e.indent] != '\t') {
        e.own_line = 0;
        break;
      }
    if (e.own_line) e.offset = start;
    if (!push_edit(w, e)) w->oom = 1;
  }
  ++w->depth;
  clang_visitChildren(c, visit, w);
  --w->depth;
}

static enum CXChildVisitResult visit(CXCursor c, CXCursor parent, CXClientData data) {
  walk *w = (walk *)data;
  enum CXCursorKind k = clang_getCursorKind(c);
  CXSourceLocation loc = clang_getCursorLocation(c);
  CXFile file;
  (void)parent;
  if (w->oom) return CXChildVisit_Break;
  /* Only the input file's own code, not headers or macro expansions. */
  clang_getSpellingLocation(loc, &file, NULL, NULL, NULL);
  if (!file || !clang_File_isEqual(file, w->file)) return CXChildVisit_Continue;
  if (k == CXCursor_FunctionDecl && clang_isCursorDefinition(c)) {
    if (w->model->runner) {
      CXString name = clang_getCursorSpelling(c);
      if (mlb_switch_context(w->model->runner, clang_getCString(name)) != MLB_OK)
        model_failed(w->model, "context");
      clang_disposeString(name);
    }
    return CXChildVisit_Recurse;
  }
  if (is_loop(k)) {
    CXSourceLocation exp = clang_getCursorLocation(c);
    CXFile ef;
    unsigned eo, so;
    /* A loop written by a macro has no place in the text for a pragma. */
    clang_getExpansionLocation(exp, &ef, NULL, NULL, &eo);
    clang_getSpellingLocation(exp, &file, NULL, NULL, &so);
    if (eo != so) return CXChildVisit_Continue;
    visit_loop(w, c);
    return CXChildVisit_Continue;
  }
  return CXChildVisit_Recurse;
}

/* ---- files --------------------------------------------------------------------- */

static char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  char *buf = NULL;
  size_t cap = 0, n = 0, r;
  if (!f) return NULL;
  do {
    if (n + 4096 + 1 > cap) {
      char *p;
      cap = cap ? 2 * cap : 65536;
      p = (char *)realloc(buf, cap);
      if (!p) {
        free(buf);
        fclose(f);
        return NULL;
      }
      buf = p;
    }
    r = fread(buf + n, 1, cap - n - 1, f);
    n += r;
  } while (r > 0);
  if (ferror(f)) {
    free(buf);
    fclose(f);
    return NULL;
  }
  fclose(f);
  buf[n] = '\0';
  *len = n;
  return buf;
}

static int by_offset(const void *a, const void *b) {
  const insertion *x = (const insertion *)a, *y = (const insertion *)b;
  return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static int write_output(const walk *w, const char *path) {
  FILE *f = strcmp(path, "-") == 0 ? stdout : fopen(path, "wb");
  size_t pos = 0, i;
  int ok;
  if (!f) return 0;
  for (i = 0; i < w->edit_count; ++i) {
    const insertion *e = &w->edits[i];
    fwrite(w->source + pos, 1, e->offset - pos, f);
    pos = e->offset;
    if (e->own_line) {
      /* Same indentation as the loop, on the line before it. */
      fwrite(w->source + pos, 1, e->indent, f);
      fprintf(f, "%s\n", action_pragmas[e->action]);
    } else {
      /* Something precedes the loop on its line (`else for`): break it. */
      fprintf(f, "\n%s\n", action_pragmas[e->action]);
    }
  }
  fwrite(w->source + pos, 1, w->source_len - pos, f);
  ok = !ferror(f);
  if (f != stdout) ok = (fclose(f) == 0) && ok;
  return ok;
}

/* JSON string literal of s (quotes included). */
static void put_json_string(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; ++s) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
    else if (c < 0x20) fprintf(f, "\\u%04x", c);
    else fputc(c, f);
  }
  fputc('"', f);
}

static void put_json_ints(FILE *f, const char *key, const int *v, size_t n) {
  size_t i;
  fprintf(f, ",\"%s\":[", key);
  for (i = 0; i < n; ++i) fprintf(f, "%s%d", i ? "," : "", v[i]);
  fputc(']', f);
}

/* The integrations' one log line (docs/c-tool.md), appended with one write
 * so lines of concurrent runs do not interleave. */
static void write_log(const settings *s, const model *m, const walk *w) {
  char *line = NULL;
  size_t len = 0;
  FILE *f;
  int fd, ok;
  if (!s->log) return;
  f = open_memstream(&line, &len);
  if (!f) return;
  fprintf(f, "{\"integration\":\"" TOOL "\",\"module\":");
  put_json_string(f, s->input);
  fprintf(f, ",\"runner\":\"%s\",\"asked\":%d,\"fallbacks\":%d,\"loops\":%lu",
          mlb_runner_kind_name(m->kind), m->asked, m->fallbacks,
          (unsigned long)w->action_count);
  put_json_ints(f, "actions", w->actions, w->action_count);
  put_json_ints(f, "applied", w->applied, w->applied_count);
  fprintf(f, "}\n");
  ok = fclose(f) == 0;
  fd = ok ? open(s->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644) : -1;
  if (fd < 0 || write(fd, line, len) != (ssize_t)len)
    fprintf(stderr, TOOL ": warning: cannot write log '%s': %s\n", s->log, strerror(errno));
  if (fd >= 0) close(fd);
  free(line);
}

int main(int argc, char **argv) {
  settings s;
  model m;
  walk w;
  CXIndex index;
  int rc = parse_args(argc, argv, &s), diag_errors = 0;
  unsigned i, n;
  if (rc) return rc == 1 ? 0 : rc;

  memset(&w, 0, sizeof w);
  w.source = read_file(s.input, &w.source_len);
  if (!w.source) {
    fprintf(stderr, TOOL ": cannot read '%s': %s\n", s.input, strerror(errno));
    return 1;
  }
  index = clang_createIndex(0, 0);
  w.tu = clang_parseTranslationUnit(index, s.input, s.clang_argv, s.clang_argc, NULL, 0,
                                    CXTranslationUnit_None);
  if (!w.tu) {
    fprintf(stderr, TOOL ": libclang could not parse '%s'\n", s.input);
    free((void *)w.source);
    clang_disposeIndex(index);
    return 1;
  }
  n = clang_getNumDiagnostics(w.tu);
  for (i = 0; i < n; ++i) {
    CXDiagnostic d = clang_getDiagnostic(w.tu, i);
    if (clang_getDiagnosticSeverity(d) >= CXDiagnostic_Error) {
      CXString t = clang_formatDiagnostic(d, clang_defaultDiagnosticDisplayOptions());
      fprintf(stderr, "%s\n", clang_getCString(t));
      clang_disposeString(t);
      ++diag_errors;
    }
    clang_disposeDiagnostic(d);
  }
  if (diag_errors) {
    /* Pragmas in a file the compiler rejects help no one. */
    fprintf(stderr, TOOL ": '%s' does not compile; nothing written\n", s.input);
    clang_disposeTranslationUnit(w.tu);
    clang_disposeIndex(index);
    free((void *)w.source);
    return 1;
  }
  w.file = clang_getFile(w.tu, s.input);
  model_open(&m, &s);
  w.model = &m;
  clang_visitChildren(clang_getTranslationUnitCursor(w.tu), visit, &w);
  rc = 0;
  if (w.oom) {
    fprintf(stderr, TOOL ": out of memory\n");
    rc = 1;
  } else {
    if (w.edit_count) qsort(w.edits, w.edit_count, sizeof *w.edits, by_offset);
    if (!write_output(&w, s.output)) {
      fprintf(stderr, TOOL ": cannot write '%s': %s\n", s.output, strerror(errno));
      rc = 1;
    }
  }
  write_log(&s, &m, &w);
  mlb_runner_destroy(m.runner);
  clang_disposeTranslationUnit(w.tu);
  clang_disposeIndex(index);
  free(w.edits);
  free(w.actions);
  free(w.applied);
  free((void *)w.source);
  return rc;
}
