// The threads' young tables (young_tables.hpp): adoption, the release at a thread's exit, and
// a fork's child.
#include "young_tables.hpp"

#include <pthread.h>

#include <new>

#include "pages.hpp"
#include "thread_state.hpp"
#include "young_table.hpp"

namespace liveheap::engine {
namespace {

std::atomic<bool> g_owned[kMaxYoungTables];  // a live thread owns the table at i
std::atomic<std::uint32_t> g_reserved{0};    // indexes handed out for new tables
pthread_key_t g_release_key;
std::atomic<bool> g_release_ready{false};

// The key's destructor, on the exiting thread (its value: the table's index + 1). The thread
// records in the live table from here on (a later destructor may still allocate and free).
void release_at_exit(void* value) noexcept {
  const auto i = static_cast<std::uint32_t>(reinterpret_cast<std::uintptr_t>(value) - 1);
  t_thread.young = nullptr;
  t_thread.young_asked = kNoMoreYoung;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  g_owned[i].store(false, std::memory_order_release);
  g_young_table_releases.fetch_add(1, std::memory_order_relaxed);
}

// Owned by the calling thread now: its exit hands it back.
YoungTable* own(std::uint32_t i, YoungTable* table) noexcept {
  if (g_release_ready.load(std::memory_order_acquire))
    pthread_setspecific(g_release_key, reinterpret_cast<void*>(std::uintptr_t{i} + 1));
  return table;
}

}  // namespace

YoungTable* adopt_young_table(bool (*room)(std::size_t bytes)) noexcept {
  const std::uint32_t n = young_table_count();
  for (std::uint32_t i = 0; i < n; ++i) {
    YoungTable* table = young_table(i);
    bool owned = false;
    if (table != nullptr && !g_owned[i].load(std::memory_order_relaxed) &&
        g_owned[i].compare_exchange_strong(owned, true, std::memory_order_acquire))
      return own(i, table);
  }
  if (g_reserved.load(std::memory_order_relaxed) >= kMaxYoungTables || !room(sizeof(YoungTable)))
    return nullptr;
  const std::uint32_t i = g_reserved.fetch_add(1, std::memory_order_relaxed);
  if (i >= kMaxYoungTables) return nullptr;
  void* pages = map_pages(sizeof(YoungTable));
  if (pages == nullptr) return nullptr;  // the index stays empty
  auto* table = new (pages) YoungTable;
  g_owned[i].store(true, std::memory_order_relaxed);  // before anyone can see the table
  g_young_tables[i].store(table, std::memory_order_release);
  std::uint32_t count = g_young_table_count.load(std::memory_order_relaxed);
  while (count < i + 1 &&
         !g_young_table_count.compare_exchange_weak(count, i + 1, std::memory_order_release)) {
  }
  return own(i, table);
}

void prepare_young_table_release() noexcept {
  if (g_release_ready.load(std::memory_order_relaxed)) return;
  // Without a key (the process used up PTHREAD_KEYS_MAX), tables stay with their threads.
  if (pthread_key_create(&g_release_key, release_at_exit) == 0)
    g_release_ready.store(true, std::memory_order_release);
}

void free_young_tables_of_other_threads(const YoungTable* forking_threads) noexcept {
  const std::uint32_t n = young_table_count();
  for (std::uint32_t i = 0; i < n; ++i) {
    const YoungTable* table = young_table(i);
    g_owned[i].store(table != nullptr && table == forking_threads, std::memory_order_relaxed);
  }
}

}  // namespace liveheap::engine
