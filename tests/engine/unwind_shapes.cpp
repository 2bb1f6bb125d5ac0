// Stack shapes for the unwinder tests (see unwind_shapes.hpp).
#include "unwind_shapes.hpp"

#include <alloca.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <functional>

#include "stack_capture.hpp"

namespace liveheap::engine::test {
namespace {

volatile std::uintptr_t g_sink;
thread_local const std::vector<Shape>* t_shapes;
thread_local std::uint32_t t_max_frames;
thread_local bool t_from_here;
thread_local Captured* t_out;

void descend(int level);

// Each frame does work after its call, so no call is a tail call and every frame stays.
[[gnu::noinline]] void plain_frame(int level) {
  descend(level + 1);
  g_sink = g_sink + static_cast<std::uintptr_t>(level);
}

[[gnu::noinline]] void alloca_frame(int level) {
  auto* buffer = static_cast<volatile char*>(alloca(64 + 48 * static_cast<std::size_t>(level)));
  buffer[0] = static_cast<char>(level);
  descend(level + 1);
  g_sink = g_sink + static_cast<std::uintptr_t>(buffer[0]);
}

struct alignas(64) Wide {
  volatile char bytes[64];
};
[[gnu::noinline]] void realigned_frame(int level) {
  Wide wide;
  wide.bytes[0] = static_cast<char>(level);
  descend(level + 1);
  g_sink = g_sink + static_cast<std::uintptr_t>(wide.bytes[0]);
}

[[gnu::noinline]] void std_function_frame(int level) {
  const std::function<void()> call = [level] { descend(level + 1); };
  call();
  g_sink = g_sink + static_cast<std::uintptr_t>(level);
}

// The comparator descends once, from inside libstdc++'s (inlined, then ours) sort code.
[[gnu::noinline]] void std_sort_frame(int level) {
  std::array<int, 3> values{3, 1, 2};
  bool descended = false;
  std::sort(values.begin(), values.end(), [&](int a, int b) {
    if (!descended) {
      descended = true;
      descend(level + 1);
    }
    return a < b;
  });
  g_sink = g_sink + static_cast<std::uintptr_t>(values[0]);
}

// glibc's qsort calls back into us: frames of libc.so.6 in the middle of the stack.
thread_local int t_qsort_level;
thread_local bool t_qsort_descended;
int qsort_compare(const void* a, const void* b) {
  if (!t_qsort_descended) {
    t_qsort_descended = true;
    descend(t_qsort_level + 1);
  }
  return *static_cast<const int*>(a) - *static_cast<const int*>(b);
}
[[gnu::noinline]] void qsort_frame(int level) {
  int values[3] = {3, 1, 2};
  t_qsort_level = level;
  t_qsort_descended = false;
  std::qsort(values, 3, sizeof(int), qsort_compare);
  g_sink = g_sink + static_cast<std::uintptr_t>(values[0]);
}

[[gnu::noinline]] void bottom() {
  *t_out = capture_all(t_max_frames, t_from_here);
  g_sink = g_sink + 1;
}

void descend(int level) {
  const std::vector<Shape>& shapes = *t_shapes;
  if (level >= static_cast<int>(shapes.size())) return bottom();
  switch (shapes[static_cast<std::size_t>(level)]) {
    case Shape::plain: return plain_frame(level);
    case Shape::alloca_frame: return alloca_frame(level);
    case Shape::realigned: return realigned_frame(level);
    case Shape::unoptimized: return call_unoptimized(descend, level + 1);
    case Shape::std_function: return std_function_frame(level);
    case Shape::std_sort: return std_sort_frame(level);
    case Shape::qsort_callback: return qsort_frame(level);
    case Shape::kCount: break;
  }
}

}  // namespace

[[gnu::noinline]] Captured capture_all(std::uint32_t max_frames, bool from_here) {
  Captured c;
  std::vector<std::uintptr_t>* outputs[] = {&c.frame_rules, &c.libunwind, &c.libgcc};
  constexpr Unwinder kUnwinders[] = {Unwinder::frame_rules, Unwinder::libunwind, Unwinder::libgcc};
  std::uintptr_t frames[kMaxFramesCapture + kOwnFramesSlack];
  std::uint32_t depths[3] = {};
  bool walked[3] = {};
  // One call site for all three, so the innermost user frame is the same return address.
  for (int i = 0; i < 3; ++i) {
    walked[i] = capture_stack_with(kUnwinders[i], frames, max_frames, &depths[i]);
    if (walked[i]) outputs[i]->assign(frames, frames + depths[i]);
  }
  c.frame_rules_walked = walked[0];
  if (from_here) {
    std::uint64_t hash = 0;
    const std::uint32_t depth = capture_stack(frames, max_frames, &hash, nullptr, here());
    c.from_here.assign(frames, frames + depth);
    c.from_here_hash = hash;
    c.from_here_taken = true;
  }
  return c;
}

Captured capture_through(const std::vector<Shape>& shapes, std::uint32_t max_frames) {
  Captured out;
  t_shapes = &shapes;
  t_max_frames = max_frames;
  t_out = &out;
  descend(0);
  return out;
}

Captured capture_through_from_here(const std::vector<Shape>& shapes, std::uint32_t max_frames) {
  t_from_here = true;
  Captured out = capture_through(shapes, max_frames);
  t_from_here = false;
  return out;
}

}  // namespace liveheap::engine::test
