/* control: conditionals inside loops (if-conversion candidates, guarded
 * stores, mixed control and data dependences). */
#include "loops.h"

void control_select(void) {
  DIST
  for (int i = 0; i < LEN; i++) {
    a[i] = d[i] > 0.0f ? b[i] : c[i];
  }
}

void control_guarded_store(void) {
  DIST
  for (int i = 0; i < LEN; i++) {
    if (d[i] > 0.0f) {
      a[i] = b[i] * c[i];
    }
  }
}

void control_if_else(void) {
  DIST
  for (int i = 0; i < LEN; i++) {
    if (ia[i] > 0) {
      a[i] = b[i] + c[i];
    } else {
      a[i] = b[i] - c[i];
    }
  }
}

void control_guard_and_map(void) {
  DIST
  for (int i = 0; i < LEN; i++) {
    if (d[i] < 0.0f) {
      a[i] = -d[i];
    }
    c[i] = b[i] * e[i];
  }
}

void control_guard_carried(void) {
  DIST
  for (int i = 1; i < LEN; i++) {
    if (d[i] > 0.0f) {
      a[i] = a[i - 1] + b[i];
    }
    c[i] = e[i] * 2.0f;
  }
}

void control_clamp(void) {
  DIST
  for (int i = 0; i < LEN; i++) {
    float t = b[i] + d[i];
    a[i] = t < 0.0f ? 0.0f : (t > 1.0f ? 1.0f : t);
  }
}

void control_abs_int(void) {
  DIST
  for (int i = 0; i < LEN; i++) {
    ib[i] = ia[i] < 0 ? -ia[i] : ia[i];
  }
}

void control_nested_if(void) {
  DIST
  for (int i = 0; i < LEN; i++) {
    if (d[i] > 0.0f) {
      if (e[i] > 0.5f) {
        a[i] = b[i];
      } else {
        a[i] = c[i];
      }
    }
  }
}

void control_goto_skip(void) {
  DIST
  for (int i = 0; i < LEN; i++) {
    if (ia[i] < -40)
      continue;
    a[i] = b[i] + c[i] * e[i];
  }
}

void control_two_guards(void) {
  DIST
  for (int i = 0; i < LEN; i++) {
    if (d[i] > 0.0f) {
      a[i] = b[i] + 1.0f;
    }
    if (ia[i] > 10) {
      c[i] = e[i] * 0.5f;
    }
  }
}
