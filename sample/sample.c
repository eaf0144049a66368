/*
 * ptkit's bundled sample: a small program worth looking at in a profiler.
 *
 * It evaluates arithmetic expressions with a recursive-descent parser, sorts
 * pseudo-random numbers (quicksort, insertion sort for short runs), hashes them
 * (FNV-1a) and computes Fibonacci numbers the slow, recursive way; about 200,000
 * instructions in all.
 *
 * It is freestanding (no libc): its own _start, system calls by inline assembly,
 * output through write(2). The binary is a few KB, the trace never leaves it, and
 * decoding needs no particular libc. tools/sample/regenerate.sh builds it.
 */

typedef unsigned long u64;
typedef unsigned int u32;

/* The entry point: align the stack, call main, exit with its result. */
__asm__(".text\n"
        ".globl _start\n"
        ".type _start, @function\n"
        "_start:\n"
        "  xor %ebp, %ebp\n"
        "  and $-16, %rsp\n"
        "  call main\n"
        "  mov %eax, %edi\n"
        "  mov $60, %eax\n" /* exit */
        "  syscall\n"
        "  hlt\n"
        ".size _start, . - _start\n");

static long sys_write(int fd, const void *buf, u64 len) {
  long ret;
  __asm__ volatile("syscall"
                   : "=a"(ret)
                   : "a"(1L), "D"((long)fd), "S"(buf), "d"(len)
                   : "rcx", "r11", "memory");
  return ret;
}

/* ---- output ---- */

static char out_buf[256];
static int out_len;

static void flush(void) {
  sys_write(1, out_buf, (u64)out_len);
  out_len = 0;
}

static void put_char(char c) {
  if (out_len == (int)sizeof out_buf) flush();
  out_buf[out_len++] = c;
}

static void put_str(const char *s) {
  while (*s) put_char(*s++);
}

static void put_num(long v) {
  char digits[24];
  int n = 0;
  u64 u = v < 0 ? -(u64)v : (u64)v;
  if (v < 0) put_char('-');
  do {
    digits[n++] = (char)('0' + u % 10);
    u /= 10;
  } while (u);
  while (n) put_char(digits[--n]);
}

static void put_hex(u64 v) {
  put_str("0x");
  for (int shift = 60; shift >= 0; shift -= 4) put_char("0123456789abcdef"[(v >> shift) & 15]);
}

/* ---- expressions: expr = term {(+|-) term}, term = factor {(*|/|%) factor},
 *      factor = number | -factor | ( expr ) ---- */

static const char *cursor;

static void skip_spaces(void) {
  while (*cursor == ' ') cursor++;
}

static long parse_expr(void);

static long parse_number(void) {
  long v = 0;
  while (*cursor >= '0' && *cursor <= '9') v = v * 10 + (*cursor++ - '0');
  return v;
}

static long parse_factor(void) {
  skip_spaces();
  if (*cursor == '-') {
    cursor++;
    return -parse_factor();
  }
  if (*cursor == '(') {
    cursor++;
    long v = parse_expr();
    skip_spaces();
    if (*cursor == ')') cursor++;
    return v;
  }
  return parse_number();
}

static long parse_term(void) {
  long v = parse_factor();
  for (;;) {
    skip_spaces();
    char op = *cursor;
    if (op != '*' && op != '/' && op != '%') return v;
    cursor++;
    long rhs = parse_factor();
    if (op == '*') v *= rhs;
    else if (rhs == 0) v = 0;
    else if (op == '/') v /= rhs;
    else v %= rhs;
  }
}

static long parse_expr(void) {
  long v = parse_term();
  for (;;) {
    skip_spaces();
    char op = *cursor;
    if (op != '+' && op != '-') return v;
    cursor++;
    long rhs = parse_term();
    v = op == '+' ? v + rhs : v - rhs;
  }
}

static long evaluate(const char *text) {
  cursor = text;
  return parse_expr();
}

/* ---- sorting and hashing ---- */

#define COUNT 1000

static u32 numbers[COUNT];
static u64 rng_state = 0x9e3779b97f4a7c15UL;

static u32 next_random(void) {
  /* xorshift64 */
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (u32)(rng_state >> 32);
}

static void fill_random(u32 *a, int n) {
  for (int i = 0; i < n; i++) a[i] = next_random() % 100000;
}

static void insertion_sort(u32 *a, int lo, int hi) {
  for (int i = lo + 1; i <= hi; i++) {
    u32 v = a[i];
    int j = i - 1;
    while (j >= lo && a[j] > v) {
      a[j + 1] = a[j];
      j--;
    }
    a[j + 1] = v;
  }
}

static int partition(u32 *a, int lo, int hi) {
  u32 pivot = a[lo + (hi - lo) / 2];
  int i = lo - 1;
  int j = hi + 1;
  for (;;) {
    do i++;
    while (a[i] < pivot);
    do j--;
    while (a[j] > pivot);
    if (i >= j) return j;
    u32 t = a[i];
    a[i] = a[j];
    a[j] = t;
  }
}

static void quicksort(u32 *a, int lo, int hi) {
  if (hi - lo < 12) {
    insertion_sort(a, lo, hi);
    return;
  }
  int p = partition(a, lo, hi);
  quicksort(a, lo, p);
  quicksort(a, p + 1, hi);
}

static int is_sorted(const u32 *a, int n) {
  for (int i = 1; i < n; i++)
    if (a[i - 1] > a[i]) return 0;
  return 1;
}

static u64 fnv1a(const u32 *a, int n) {
  u64 h = 0xcbf29ce484222325UL;
  const unsigned char *p = (const unsigned char *)a;
  for (int i = 0; i < n * 4; i++) {
    h ^= p[i];
    h *= 0x100000001b3UL;
  }
  return h;
}

/* ---- recursion ---- */

static long fib(int n) {
  return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

/* ---- main ---- */

static const char *const expressions[] = {
    "1 + 2 * 3",
    "(1 + 2) * 3 - 4 / (5 - 3)",
    "-(7 * (8 - (9 - (10 * (11 - 12)))))",
    "((((((((1+1)*2)+3)*4)+5)*6)+7)*8) % 1000",
};

int main(void) {
  for (unsigned i = 0; i < sizeof expressions / sizeof expressions[0]; i++) {
    put_str(expressions[i]);
    put_str(" = ");
    put_num(evaluate(expressions[i]));
    put_char('\n');
  }
  fill_random(numbers, COUNT);
  quicksort(numbers, 0, COUNT - 1);
  put_str("sorted ");
  put_num(COUNT);
  put_str(is_sorted(numbers, COUNT) ? " numbers, " : " numbers NOT sorted, ");
  put_str("min ");
  put_num(numbers[0]);
  put_str(" max ");
  put_num(numbers[COUNT - 1]);
  put_str(", fnv1a ");
  put_hex(fnv1a(numbers, COUNT));
  put_char('\n');
  put_str("fib(17) = ");
  put_num(fib(17));
  put_char('\n');
  flush();
  return 0;
}
