// The benchmark's madvise counter (see madvise_counter.hpp): an exported `madvise` that
// counts and makes the system call. Compiled into large_blocks (exported with -rdynamic)
// and built as libbench_madvise_counter.so, which the driver preloads into the Python
// workloads; they read the count with ctypes.
#include "madvise_counter.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>

namespace {
std::atomic<long> g_madvise_calls{0};
}  // namespace

extern "C" int madvise(void* addr, std::size_t length, int advice) {
  g_madvise_calls.fetch_add(1, std::memory_order_relaxed);
  return static_cast<int>(syscall(SYS_madvise, addr, length, advice));
}

extern "C" long liveheap_bench_madvise_calls() {
  return g_madvise_calls.load(std::memory_order_relaxed);
}
