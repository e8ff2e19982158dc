/* A unit of its own (a ThinLTO backend module of its own). */
long add3(long a, long b, long c);

long mix(long a, long b) {
  long r = 0;
  for (int i = 0; i < 40; i++) {
    r = add3(r * 31, a ^ (b >> (i & 7)), i);
    a += r & 255;
  }
  return r;
}
