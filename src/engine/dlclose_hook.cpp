// Interposes dlclose: once an object is unloaded, another may be mapped at its addresses,
// and the frame rules cached for its code would walk the new code's stacks wrongly.
// (heaptrack marks its module cache dirty the same way.)
#include <atomic>
#include <dlfcn.h>

#include "python_runtime.hpp"
#include "stack_capture.hpp"

extern "C" [[gnu::visibility("default")]] int dlclose(void* handle) {
  using Dlclose = int (*)(void*);
  static std::atomic<Dlclose> next{nullptr};
  Dlclose real = next.load(std::memory_order_acquire);
  if (real == nullptr) {
    real = reinterpret_cast<Dlclose>(dlsym(RTLD_NEXT, "dlclose"));
    if (real == nullptr) return -1;  // cannot happen with glibc; never recurse into ourselves
    next.store(real, std::memory_order_release);
  }
  const int result = real(handle);
  liveheap::engine::forget_frame_rules();
  liveheap::engine::forget_python_if_unloaded();
  return result;
}
