// A program that throws and catches: `throw_loop N` does N throw/catch rounds, each
// through 10 frames. The throw cost test runs it under callgrind, with and without liveheap.
#include <cstdlib>
#include <stdexcept>

namespace {

volatile int g_sink;

[[gnu::noinline]] void thrower(int depth) {
  if (depth == 0) throw std::runtime_error("thrown");
  thrower(depth - 1);
  g_sink = g_sink + depth;  // not a tail call: every frame is unwound
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 1000;
  for (int i = 0; i < rounds; ++i) {
    try {
      thrower(10);
    } catch (const std::exception&) {
      g_sink = g_sink + 1;
    }
  }
  return 0;
}
