/* The same call sequence in several functions: the machine outliner makes
   it one function called from each. */
void put(int kind, int a, int b, int c);
#define SEQ put(1, 2, 3, 4); put(5, 6, 7, 8); put(9, 10, 11, 12); put(13, 14, 15, 16)
void one(void) { SEQ; put(0, 0, 0, 1); }
void two(void) { SEQ; put(0, 0, 0, 2); }
void three(void) { SEQ; put(0, 0, 0, 3); }
void four(void) { SEQ; put(0, 0, 0, 4); }
