/* A preloaded library of another tool that watches the program's closes, as proxychains
   and torsocks do: it counts them and, at exit, writes "CLOSES <n>" on stderr. Preloaded
   after liveheap (host_safety_test.cpp), it must still see every close of the program. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <unistd.h>

static int closes;

int close(int fd) {
  static int (*next)(int);
  if (next == NULL) next = (int (*)(int))dlsym(RTLD_NEXT, "close");
  ++closes;
  return next(fd);
}

__attribute__((destructor)) static void report(void) {
  char line[32];
  const int n = snprintf(line, sizeof line, "CLOSES %d\n", closes);
  if (write(2, line, (size_t)n) < 0) return;
}
