// Repairs for a forked child (see fork_repairs.hpp).
#include "fork_repairs.hpp"

#include <atomic>

namespace liveheap::engine {
namespace {

// Constant-initialized: usable before any constructor, and never destroyed.
std::atomic<void (*)()> g_repairs[kForkRepairs] = {};

}  // namespace

void on_fork_child(void (*repair)()) noexcept {
  for (auto& slot : g_repairs) {
    void (*expected)() = nullptr;
    if (slot.compare_exchange_strong(expected, repair) || expected == repair) return;
  }
}

void run_fork_repairs() noexcept {
  for (auto& slot : g_repairs)
    if (void (*repair)() = slot.load(std::memory_order_relaxed)) repair();
}

}  // namespace liveheap::engine
