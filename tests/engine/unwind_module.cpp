// A module the unwinder tests dlopen and dlclose. Built twice: variant B lays its code out
// differently and uses other frame shapes, so the same addresses (when the loader reuses
// them) need other rules than A's.
#include <alloca.h>

namespace {

volatile int g_sink;

#if LIVEHEAP_MODULE_VARIANT == 2
// Padding: moves the functions below to other offsets than in variant A.
[[gnu::noinline, gnu::used]] int padding(int x) {
  for (int i = 0; i < x; ++i) g_sink = g_sink + i * x;
  return g_sink;
}
#endif

[[gnu::noinline]] void nest(void (*callback)(void*), void* arg, int depth) {
#if LIVEHEAP_MODULE_VARIANT == 2
  auto* buffer = static_cast<volatile char*>(alloca(32 + 16 * static_cast<unsigned>(depth)));
  buffer[0] = static_cast<char>(depth);
#endif
  if (depth == 0) callback(arg);
  else nest(callback, arg, depth - 1);
  g_sink = g_sink + depth;
}

}  // namespace

extern "C" [[gnu::visibility("default")]] void module_call(void (*callback)(void*), void* arg, int depth) {
  nest(callback, arg, depth);
  g_sink = g_sink + 1;
}
