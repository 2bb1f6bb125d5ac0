// A program that looks like a CPython liveheap cannot read: it exports the interpreter's
// evaluator and Py_Version (FAKE_PY_VERSION: a version without a layout, or 3.11 without
// the other symbols liveheap needs). Under the preload library its stacks must stay native
// and /stats must say why. For each "leak N" on stdin it leaks N MiB, then prints "done".
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

void* kept[4096];  // not a vector: its growth would allocate at the leak's line
int leaked = 0;

extern "C" {
[[gnu::visibility("default")]] extern const unsigned Py_Version;
const unsigned Py_Version = FAKE_PY_VERSION;
[[gnu::visibility("default"), gnu::noinline]] void _PyEval_EvalFrameDefault(int n) {
  for (int i = 0; i < n && leaked < 4096; ++i) kept[leaked++] = std::malloc(1 << 20);  // site: evaluator
  asm volatile("" ::: "memory");  // not a tail call: this frame stays on the stack
}
}

int main() {
  std::cout << "ready" << std::endl;
  std::string command;
  int n = 0;
  while (std::cin >> command >> n) {
    _PyEval_EvalFrameDefault(n);
    std::cout << "done" << std::endl;
  }
}
