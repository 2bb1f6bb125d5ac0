// Whole stack walks a thread repeats, each kept as the stack words that decide it and the
// stack id its frames have, so that a hook whose stack is one of them knows its id after
// checking those words alone: no rule, no cached step, no memo, no frame written.
// Thread-safety: one per thread (its walk state, walk_state.hpp), read and written only
// under the thread's walk cache `busy` flag (walk_cache.hpp), so a walk nested in a signal handler
// neither reads a walk half written nor writes one.
//
// Why it is exact: a walk is kept only when the thread's walk cache holds it from the
// hook's own frame (its code address, rsp and, where the rules read it, rbp) to where the
// walk ends, its steps' frames compared with the walk's (and its checks holding, or the
// walk would never be known). The cache's invariant (walk_cache.hpp) then says that a walk
// from that start whose checks hold takes those steps and no others: the same frames, so
// the same id. The checks are copied, so a kept walk stays right whatever the walk cache
// holds later; what can change the steps is code unloaded or another frame limit (the
// rules' generation and the limit the walks were kept for: a walk asked or kept for others
// empties them) and what the id means (a request's route: forget_stack_ids() empties the
// walks with the memo).
//
// Four walks: a server's hot paths (a few call sites under one handler, taking turns) fit,
// where the walk cache holds one walk only and takes the steps of each other's inner
// frames with the rules. A thread whose stacks vary more (a request's dozen) keeps the
// walks the four put out as spares, asked only when none of the four is the stack.
#pragma once

#include <cstdint>
#include <emmintrin.h>

#include "stack_table.hpp"
#include "walk_cache.hpp"

namespace liveheap::engine {

struct RepeatedWalks {
  static constexpr std::uint32_t kWalks = 4;
  // A walk decided by more stack words than this (~40 frames and more) is not kept.
  static constexpr std::uint32_t kChecks = 48;
  using Check = WalkCache::Steps::Check;

  struct Walk {
    std::uintptr_t sp, pc, bp;  // the hook's registers (sp 0: no walk); bp compared where needs_bp
    bool needs_bp;
    std::uint32_t checks;  // check[0..checks) decide it
    StackId id;
    StackRecord* record;  // id's, as the keeper gave it (nullptr: none)
    const Check* end;     // check + checks, where the first check that fails is the sentinel
    // The stack words in the order the walk reads them, and after them a sentinel that
    // never holds (the word `sentinel`, against its complement).
    Check check[kChecks + 1];
    std::uintptr_t sentinel;
    // A walk is here: a hook's rsp is never 0, and an empty walk (zeroed, or emptied) never
    // repeats, its rsp being no hook's.
    bool held() const noexcept { return sp != 0; }
    // Ends the checks with the sentinel, this walk's own.
    void seal() noexcept {
      check[checks] = {reinterpret_cast<std::uintptr_t>(&sentinel), ~sentinel};
      end = check + checks;
    }
  };

  // The four and the spares (below) are walks of one store, named by pointers: a walk stays
  // where it was written, and a spare brought back and the walk it replaces trade their
  // names, not their ~800 bytes.
  static constexpr std::uint32_t kSpares = 28;
  Walk stored[kWalks + kSpares];
  // What every walk held was kept for: the rules' generation + 1 and the frame limit
  // (key_for()); 0 before any. A lookup or a keep for another key empties the walks
  // first, so that a walk's own checks compare neither (the limit changes only with a new
  // session's settings, the generation when code is unloaded).
  std::uint64_t kept_for;
  static std::uint64_t key_for(std::uint32_t generation, std::uint32_t want) noexcept {
    return (std::uint64_t{generation} + 1) | std::uint64_t{want} << 32;
  }
  void empty() noexcept {
    for (Walk& w : stored) w.sp = 0;
    for (std::uint8_t& t : spare_tag) t = 0;
  }
  Walk* kept[kWalks];
  std::uint32_t next;  // the kept walk replaced by the next one kept
  std::uint32_t last;  // the kept walk known last: checked first
  Walk* last_walk;     // kept[last]
  // A state taken (zeroed): each name its own walk.
  void name_own_walks() noexcept {
    for (std::uint32_t k = 0; k < kWalks; ++k) kept[k] = &stored[k];
    for (std::uint32_t k = 0; k < kSpares; ++k) spare[k] = &stored[kWalks + k];
    last_walk = kept[last];
  }

  // The walks the four put out, asked in turn only when none of the four is the stack
  // (before a walk in full, ~1,500 instructions in a server); one that is goes back among
  // the four in place of the next to go. A request's dozen stacks outnumber the four and
  // come back each request; the loops that fit the four never ask these.
  // Each spare's tag: a byte of its start, never 0 (0: none there). Spares are searched
  // among those with the start's tag, found with two compares of 16 bytes.
  Walk* spare[kSpares];
  alignas(16) std::uint8_t spare_tag[32];
  std::uint32_t next_spare;  // the spare, in [0, kSpares), replaced by the next walk put out
  static std::uint8_t tag_of(std::uintptr_t sp, std::uintptr_t pc) noexcept {
    const std::uint64_t mix = ((sp >> 4) ^ pc) * 0x9e3779b97f4a7c15ull;
    return static_cast<std::uint8_t>(mix >> 57 | 0x80);
  }
  // The spares tagged `t`, a bit each.
  std::uint32_t spares_tagged(std::uint8_t t) const noexcept {
    static_assert(kSpares <= 32);
    const __m128i want = _mm_set1_epi8(static_cast<char>(t));
    const auto low = static_cast<std::uint32_t>(
        _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_load_si128(reinterpret_cast<const __m128i*>(spare_tag)), want)));
    const auto high = static_cast<std::uint32_t>(_mm_movemask_epi8(
        _mm_cmpeq_epi8(_mm_load_si128(reinterpret_cast<const __m128i*>(spare_tag + 16)), want)));
    return low | high << 16;
  }

  // A thread whose stacks do not repeat (each walk another: a recursion that branches at
  // random, a parser) would pay for asking and keeping at every allocation and gain
  // nothing: after kUnknownToRest walks kept in a row with no stack known in between, it
  // stops asking and keeping, and after kRestingWalks walks in full it tries again.
  static constexpr std::uint32_t kUnknownToRest = 32;
  static constexpr std::uint32_t kRestingWalks = 1024;
  std::uint64_t hits_seen;         // the walk cache's memo_hits at the last keep
  std::uint32_t unknown_in_a_row;  // keeps since a stack was last known
  bool resting;                    // not asking
  std::uint32_t rested;            // walks in full while resting
};

}  // namespace liveheap::engine
