// The previous stack walk of one thread, step by step, so that the next walk can take over
// its outer part after checking it instead of walking it again.
// Thread-safety: one per thread (its walk state, walk_state.hpp), used by one walk at a time (`busy`: a
// walk nested in another on the same thread, from a signal handler, does not use it).
//
// Why reusing is exact: a step of the walk is a function of the frame's state (code address
// `key`, rsp, and rbp when the frame's rule reads it), of the rule for `key` (fixed until
// code is unloaded: `generation`), and of the stack words it reads (the return address at
// CFA - 8, the saved rbp). A new walk that reaches a cached step's key and rsp takes that
// step, and each step after it, by comparing the two stack words in memory with the cached
// ones, and the rbp it holds where a rule from there would read it (needs_bp): equal inputs
// give the cached CFA, the cached return address and so the next cached step's key and
// rsp. The words are read at the addresses the rule walk would read at that point, in its
// order, never others. Hot paths walk
// through the same outer frames call after call (main, the event loop, the request
// handler), so most of a stack is a chain of independent loads and compares rather than
// one of dependent loads and rule lookups.
#pragma once

#include <cstdint>

#include "frame_rules.hpp"
#include "stack_table.hpp"

namespace liveheap::engine {

struct WalkCache {
  // Steps kept: max_frames is 32 by default; a walk of more output frames is not cached.
  static constexpr std::uint32_t kSteps = 64;
  static constexpr std::uint32_t kChecks = 2 * kSteps;  // at most two stack words a step

  // Steps sit at the top of the arrays, the outermost at kSteps - 1 and the innermost at
  // `first`: a new walk that reuses the outer part writes only its own inner steps below
  // it, and the cached return addresses are in the order a stack is written (innermost
  // first), copied out with one memcpy.
  struct Steps {
    std::uintptr_t sp[kSteps + 1];  // the frame's rsp; sp[kSteps] is UINTPTR_MAX, a sentinel
    std::uintptr_t key[kSteps];     // the frame's code address (the rule's key)
    std::uintptr_t bp[kSteps];      // the frame's rbp, compared where needs_bp
    std::uintptr_t cfa[kSteps];     // the caller's rsp
    std::uint64_t rule[kSteps];     // FrameRule::pack()
    std::uintptr_t frame[kSteps];   // the return address at cfa - 8: the step's output
    // The stack words a walk checks to take the steps, in the order the rules read them,
    // all steps' in one list (innermost step's first): a step's return address, then its
    // saved rbp where the steps after it use that rbp (needs_bp of the next step: a CFA
    // from rbp before another step restores it). A saved rbp no later step reads (a
    // function built without frame pointers that keeps data in rbp, called from others
    // like it) does not decide the frames, and is not checked: there a run is one load and
    // one compare per step. Step s's checks are [checks_from[s], checks_from[s + 1]);
    // checks_from[kSteps] is kChecks. check[kChecks] is a sentinel that never holds (the
    // word at sp + kSteps, UINTPTR_MAX, against 0): a run to the cache's end stops there
    // without counting its checks.
    struct Check {
      std::uintptr_t address;
      std::uintptr_t value;
    };
    Check check[kChecks + 1];
    std::uint8_t check_step[kChecks];  // the step a check belongs to
    std::uint8_t checks_from[kSteps + 1];
    // StackHash's state after the frames from the outermost cached one to this one.
    std::uint64_t hash[kSteps];
    // Whether the steps from here on use the rbp this step starts with: a rule from here
    // reads rbp before any restores it, or none does before the cache ends (the walk goes
    // on from there with the rules). Where not, a walk that meets this step with another
    // rbp takes the same steps. needs_bp[kSteps] is true.
    bool needs_bp[kSteps + 1];
    // rbp after the outermost step as the walk that wrote it saw it: a run to the cache's
    // end leaves it so (the saved rbp that set it was checked: needs_bp[kSteps]).
    std::uintptr_t bp_at_end;
    // Whether the walk that wrote the outermost step found no caller past it (its frame's
    // rule is Kind::outermost: the thread's first frame): a run to the cache's end has
    // checked that frame's return address, so its rule, and the walk ends there.
    bool outermost_at_end;
    // Steps from here outward that restore rbp (restores[kSteps] is 0): a run of reused
    // steps that restored none leaves the walk's rbp as it was.
    std::uint8_t restores[kSteps + 1];
    // The clock (WalkCache::clock) when the step was last written. A walk writes a run of
    // steps that ends where its reused run begins, all with the newest clock, so stamps
    // never grow outward: steps [s, kSteps) are unchanged since clock c iff stamp[s] <= c.
    std::uint64_t stamp[kSteps];
  };

  // The stack ids of recent walks that ended in one run of cached steps: keyed by the step
  // the run began at and the few frames the walk took before it (`fresh`). A later walk
  // that ends in a run from the same step, unchanged since (its stamp), after the same
  // fresh frames, has the same frames, so it has the same id, known without hashing or
  // comparing its frames in the stack table. Entries are only ever written with the cache
  // `busy` (memoize()), so a nested walk never reads a torn entry.
  static constexpr std::uint32_t kMemoFresh = 4;
  static constexpr std::uint32_t kMemoSlots = 32;
  // What a walk's stack is made of: where its run began, its frames in all, and how many
  // of them came before the run, packed in one word.
  static std::uint64_t memo_key(std::uint32_t run_begin, std::uint32_t depth,
                                std::uint32_t fresh_count) noexcept {
    return std::uint64_t{run_begin} | std::uint64_t{depth} << 16 | std::uint64_t{fresh_count} << 32;
  }
  struct MemoEntry {
    std::uint64_t clock;               // steps from the run's first unchanged since; 0: empty
    std::uint64_t key;                 // memo_key()
    std::uintptr_t fresh[kMemoFresh];  // the walk's own frames before the run
    StackId id;
  };
  // Where a walk that ended in one run would be memoized: handed back with its stack's id.
  struct MemoTicket {
    std::uint32_t slot = kMemoSlots;  // kMemoSlots: none (the walk cannot be memoized)
    std::uint64_t key = 0;
    std::uint64_t clock = 0;
  };

  // This walk's steps before it met the cache, by output index (frame in the output).
  struct Fresh {
    std::uintptr_t sp[kSteps];
    std::uintptr_t key[kSteps];
    std::uintptr_t bp[kSteps];
    std::uintptr_t cfa[kSteps];
    std::uint64_t rule[kSteps];
    std::uintptr_t bp_after[kSteps];  // rbp after the step (the saved rbp it read, if any)
  };

  // A run of output frames taken from the cache: out [out_begin, out_end) is cached steps
  // [step_begin, step_begin + out_end - out_begin), begun with rbp = `bp`.
  struct Reused {
    std::uint32_t out_begin, out_end, step_begin;
    std::uintptr_t bp;
  };
  static constexpr std::uint32_t kMaxReused = 4;

  // Keeping a walk costs ~50 instructions per step it did not take from the cache, so a
  // walk with many of those (stacks that differ in most frames, call after call) is kept
  // only every kRareKeep-th time: its own steps are recorded as it walks for its first
  // kCheapSteps output frames only, all of them on every kRareKeep-th walk (and on the
  // first into an empty cache).
  static constexpr std::uint32_t kCheapSteps = 8;
  static constexpr std::uint32_t kRareKeep = 8;
  std::uint32_t fresh_limit() const noexcept {
    return first == kSteps || skipped + 1 >= kRareKeep ? kSteps : kCheapSteps;
  }

  // A thread whose walks take less than half their frames from the cache, kPoorWalks walks
  // in a row, walks with the rules alone (checking no cached step, keeping nothing) but for
  // every kProbeEvery-th walk, which tries the cache again.
  static constexpr std::uint32_t kPoorWalks = 8;
  static constexpr std::uint32_t kProbeEvery = 16;
  bool rules_alone() noexcept { return poor >= kPoorWalks && ++since_probe % kProbeEvery != 0; }

  bool busy;
  std::uint32_t skipped;  // walks not kept since the last long one kept
  std::uint32_t poor;     // walks in a row that took less than half from the cache
  std::uint32_t since_probe;
  std::uint64_t generation_plus_one;  // the rule cache's generation + 1; 0: never filled
  std::uint32_t first;                // the innermost cached step; kSteps: none
  std::uint64_t reused_frames;        // for tests: output frames taken from the cache
  std::uint64_t walks;                // for tests: walks that used the cache
  std::uint64_t memo_hits;            // walks whose stack id the memo or a kept walk knew (tests;
                                      // and the kept walks' rest, repeated_walks.hpp)
  std::uint64_t clock;                // bumped by every remember() that writes steps
  Steps steps;
  Fresh fresh;
  MemoEntry memo[kMemoSlots];

  // For a walk of `n` frames that ended in one run of cached steps from `run_begin` after
  // `fresh_count` frames of its own (frames[0..fresh_count)): the stack's id when the memo
  // knows it (kNoStack otherwise), and in *ticket where to memoize it. Call before
  // remember(), which may rewrite the steps the run was checked against.
  StackId recall(const std::uintptr_t* frames, std::uint32_t n, std::uint32_t fresh_count,
                 std::uint32_t run_begin, MemoTicket* ticket) noexcept {
    if (fresh_count > kMemoFresh) return kNoStack;
    // The slot: the fresh frames (or, with none, the run's first, which is not in `frames`
    // yet) and where the run began; a collision only costs a miss. Every fresh frame counts:
    // stacks that differ only further out than the innermost call site (a helper called
    // from many places) must not all fall into one slot.
    std::uintptr_t mix = fresh_count > 0 ? run_begin : steps.frame[run_begin] >> 4 ^ run_begin;
    for (std::uint32_t i = 0; i < fresh_count; ++i) mix = mix * 31 + (frames[i] >> 4);
    const auto slot = static_cast<std::uint32_t>((mix ^ mix >> 5 ^ mix >> 11) & (kMemoSlots - 1));
    const std::uint64_t key = memo_key(run_begin, n, fresh_count);
    *ticket = {slot, key, clock};
    const MemoEntry& e = memo[slot];
    if (e.key != key || steps.stamp[run_begin] > e.clock || e.clock == 0) return kNoStack;
    for (std::uint32_t i = 0; i < fresh_count; ++i)
      if (e.fresh[i] != frames[i]) return kNoStack;
    ++memo_hits;
    return e.id;
  }
  // Records `id` as the stack of the walk `ticket` came from (frames: that walk's output).
  // The caller has set `busy`.
  void memoize(const std::uintptr_t* frames, const MemoTicket& ticket, StackId id) noexcept {
    MemoEntry& e = memo[ticket.slot];
    e.clock = ticket.clock;
    e.key = ticket.key;
    const auto fresh_count = static_cast<std::uint32_t>(ticket.key >> 32);
    for (std::uint32_t i = 0; i < fresh_count; ++i) e.fresh[i] = frames[i];
    e.id = id;
  }

  // Empties the cache unless it belongs to `generation` (code unloaded since: a cached
  // step's rule may no longer be its key's).
  void check_generation(std::uint32_t generation) noexcept {
    if (__builtin_expect(generation_plus_one != std::uint64_t{generation} + 1, 0)) {
      generation_plus_one = std::uint64_t{generation} + 1;
      first = kSteps;
      steps.sp[kSteps] = UINTPTR_MAX;
      steps.needs_bp[kSteps] = true;
      steps.checks_from[kSteps] = kChecks;
      steps.outermost_at_end = false;
      steps.check[kChecks] = {reinterpret_cast<std::uintptr_t>(&steps.sp[kSteps]), 0};
      skipped = poor = since_probe = 0;
      ++clock;  // every step is rewritten before a run can begin at it: memo entries go stale
    }
  }

  // After a walk of `n` output frames (`frames`) whose runs `reused[0..reused_count)` came
  // from the cache (reused_count > kMaxReused: too many to say), whose own steps were
  // recorded for its first `recorded` output frames, and which ended at an outermost frame
  // or not: makes the cache this walk's, when they suffice, and returns its hash_frames().
  std::uint64_t remember(const std::uintptr_t* frames, std::uint32_t n, const Reused* reused,
                         std::uint32_t reused_count, std::uint32_t recorded, bool ended_outermost) noexcept;

  // Counts a walk of `n` output frames that took `taken` of them from the cache (for the
  // rules-alone decision and the tests). remember() calls it; a walk whose id the memo
  // knew calls it instead of remember(): the cache stays as it was, every step of it still
  // checked before any later walk takes it.
  void count_walk(std::uint32_t n, std::uint32_t taken) noexcept {
    ++walks;
    reused_frames += taken;
    if (2 * taken >= n) poor = 0;
    else if (poor < kPoorWalks) ++poor;
  }
};

}  // namespace liveheap::engine
