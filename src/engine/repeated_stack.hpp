// Whether a hook's stack is one of its thread's kept walks (repeated_walks.hpp): asked
// inline by the allocation hook, which calls nothing else on its fast path (as a call, the
// ask made the hook save five registers and pass its arguments and a pair back).
#pragma once

#include <atomic>
#include <cstdint>

#include "frame_rule_cache.hpp"
#include "own_code.hpp"
#include "repeated_walks.hpp"
#include "walk_start.hpp"
#include "walk_state.hpp"

namespace liveheap::engine {

extern FrameRuleCache g_frame_rules;  // the frame rules stacks are walked with (stack_capture.cpp)

// A stack a kept walk knew: its id, and the record the caller gave with it (the stack
// table's: records are never freed), so that the caller need not look the id up again.
struct RepeatedStack {
  StackId id = kNoStack;
  StackRecord* record = nullptr;
};

// Whether the stack word a check reads still holds the value it was cached with.
[[gnu::always_inline]] inline bool holds(const WalkCache::Steps::Check* k) noexcept {
  return *reinterpret_cast<const std::uintptr_t*>(k->address) == k->value;
}

// The first of the cached checks from `check` on whose stack word no longer holds its
// value; a run to the cache's end, which the sentinel stops. By fours, each failure its own
// exit (one load of each word, a compare and a branch a check; no count kept).
[[gnu::always_inline]] inline const WalkCache::Steps::Check* first_failed_check(
    const WalkCache::Steps::Check* check) noexcept {
  for (;; check += 4) {
    if (!holds(check)) return check;
    if (!holds(check + 1)) return check + 1;
    if (!holds(check + 2)) return check + 2;
    if (!holds(check + 3)) return check + 3;
  }
}

// Whether a walk from `start` is the kept walk `w`: it starts there and the stack words
// that decide it still hold. (It was kept for the rules and the frame limit of this walk:
// RepeatedWalks::kept_for.)
[[gnu::always_inline]] inline bool repeats(const RepeatedWalks::Walk& w, const WalkStart& start) noexcept {
  return w.sp == start.sp && w.pc == start.pc && (!w.needs_bp || w.bp == start.bp) &&
         first_failed_check(w.check) == w.end;
}

// Out of line: the kept walks but the one known last, then the spares (stack_capture.cpp).
const RepeatedWalks::Walk* another_repeated_walk(RepeatedWalks& walks, const WalkStart& start) noexcept;
// Empties the walks kept for another key, before any is asked or kept for `key`.
void forget_walks(RepeatedWalks& walks, std::uint64_t key) noexcept;

// The stack a walk from `start` (a hook's registers) with at most `want` frames would find,
// when it is one of the whole walks this thread repeats, known after checking their stack
// words; id kNoStack otherwise (then walk with capture_stack). keep_repeated_walk()
// (stack_capture.hpp) makes a walk one of them. Ask only when ask_repeated_walks(): a
// thread that never kept a walk (one whose walks have Python frames), or whose asks keep
// finding none, pays nothing here.
[[gnu::always_inline]] inline RepeatedStack repeated_stack(std::uint32_t want,
                                                           const WalkStart& start) noexcept {
  WalkState* const state = t_walk_state;  // asked after a walk only: taken then
  if (__builtin_expect(state == nullptr, 0)) return {};
  RepeatedWalks& walks = state->repeated;
  WalkCache& cache = state->cache;
  if (__builtin_expect(cache.busy, 0)) return {};
  cache.busy = true;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  RepeatedStack known;
  if (const std::uint64_t key = RepeatedWalks::key_for(g_frame_rules.generation(), want);
      walks.kept_for != key) [[unlikely]] {
    forget_walks(walks, key);  // kept for other rules or another frame limit
  } else {
    // The walk known last first: a thread repeating one stack checks one walk.
    const RepeatedWalks::Walk* last = walks.last_walk;
    if (const RepeatedWalks::Walk* w = repeats(*last, start) ? last : another_repeated_walk(walks, start)) {
      known = {w->id, w->record};
      ++cache.memo_hits;  // no other count: the walk cache was not asked
    }
  }
  std::atomic_signal_fence(std::memory_order_seq_cst);
  cache.busy = false;
  return known;
}

}  // namespace liveheap::engine
