// The threads' young tables (young_table.hpp), at most kMaxYoungTables, each owned by one
// live thread at a time. A thread that exits hands its table back, blocks and all, and the
// next thread to trace without one takes it over: the blocks stay claimable by whoever frees
// them (the new owner included), so a program whose first threads were short-lived still
// gives its long-lived workers tables. A thread that finds none free and no room for a new
// one records in the live table.
//
// Thread-safety: adopt_young_table() and the release at exit from any thread; ownership
// passes through an atomic flag per table (the releasing thread's writes to the table happen
// before the next owner's). Tables are never unmapped: a clear empties them, and anyone may
// read them.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace liveheap::engine {

class YoungTable;

inline constexpr std::uint32_t kMaxYoungTables = 8;

// How many tables threads have handed back at their exit: a thread that asked for one
// before the last release may find one now.
inline std::atomic<std::uint32_t> g_young_table_releases{0};
inline std::uint32_t young_table_releases() noexcept {
  return g_young_table_releases.load(std::memory_order_relaxed);
}
// ThreadState::young_asked of a thread that has handed its table back: it asks no more.
inline constexpr std::uint32_t kNoMoreYoung = ~std::uint32_t{0};

// The calling thread's table: one that no live thread owns, else a new one when
// room(sizeof(YoungTable)) allows; nullptr when neither.
YoungTable* adopt_young_table(bool (*room)(std::size_t bytes)) noexcept;
// Makes what hands a thread's table back when the thread exits (a pthread key's destructor);
// outside any hook, before tables are adopted. Without it, tables stay with their threads.
void prepare_young_table_release() noexcept;
// In a fork's child, where only the forking thread lives: every other thread's table is free.
void free_young_tables_of_other_threads(const YoungTable* forking_threads) noexcept;

// Every table mapped so far (owned or not): [0, count), nullptr at an index whose table
// is not mapped (yet, or ever: its mapping failed).
inline std::atomic<YoungTable*> g_young_tables[kMaxYoungTables];
inline std::atomic<std::uint32_t> g_young_table_count{0};
inline std::uint32_t young_table_count() noexcept {
  const std::uint32_t n = g_young_table_count.load(std::memory_order_acquire);
  return n < kMaxYoungTables ? n : kMaxYoungTables;
}
inline YoungTable* young_table(std::uint32_t i) noexcept {
  return g_young_tables[i].load(std::memory_order_acquire);
}
// visit(table) for each table mapped so far until one returns true; whether one did.
template <typename Visit>
bool any_young_table(Visit visit) noexcept {
  const std::uint32_t n = young_table_count();
  for (std::uint32_t i = 0; i < n; ++i)
    if (YoungTable* table = young_table(i); table != nullptr && visit(*table)) return true;
  return false;
}
template <typename Visit>
void for_each_young_table(Visit visit) noexcept {
  any_young_table([&](YoungTable& table) {
    visit(table);
    return false;
  });
}

}  // namespace liveheap::engine
