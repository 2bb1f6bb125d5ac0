// Captures the caller's stack as raw return addresses, without allocating.
// Thread-safety: capture_stack is safe on any thread once load_unwinder has returned;
// forget_frame_rules may run concurrently with it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "repeated_stack.hpp"
#include "thread_state.hpp"
#include "walk_cache.hpp"
#include "walk_start.hpp"

#include "shared.hpp"

namespace liveheap::engine {

// The deepest stack the engine keeps (the tracker checks that settings::kFrames fits).
inline constexpr std::uint32_t kMaxFramesCapture = 128;

// Stacks are walked with cached frame rules (frame_rules.hpp); a stack with a frame they
// cannot step goes to libunwind, loaded privately (dlopen RTLD_LOCAL): linked normally, its
// exported _Unwind_* would replace libgcc_s's for the whole process and make every C++
// throw ~90x slower. Without libunwind, libgcc's _Unwind_Backtrace (~10x slower).
// Call outside the hooks (it allocates); idempotent.
LIVEHEAP_SHARED void load_unwinder() noexcept;

// Our own frames on top of a captured stack (hook, engine, operator new: the functions in
// the liveheap_text section, own_code.hpp): captured, then dropped. `frames` must hold
// max + kOwnFramesSlack entries.
inline constexpr std::uint32_t kOwnFramesSlack = 8;

// Fills `frames` with up to `max` return addresses of the caller's stack, liveheap's own
// frames at the top removed, and `*hash` with their hash_frames(). Returns how many.
std::uint32_t capture_stack(std::uintptr_t* frames, std::uint32_t max, std::uint64_t* hash) noexcept;

// The same, and the stack's interned id when this thread's walk cache has seen the stack
// since its steps were last rewritten (WalkCache::recall): then `known->id` is it and the
// stack table need not be asked (and neither `*hash` nor the frames past the walk's first
// few are written: only the frames the memo compared). Otherwise `known->id` is
// kNoStack; once the caller has the id, remember_stack_id() lets the next walk of the same
// stack know it. `start`: where the walk begins, a frame that has not returned (a hook's
// here(), which it passes down); none: at the walk's own frame. Either way, the frames
// that are liveheap's own are not in the output.
struct KnownStack {
  StackId id = kNoStack;
  WalkCache::MemoTicket ticket;
};
std::uint32_t capture_stack(std::uintptr_t* frames, std::uint32_t max, std::uint64_t* hash, KnownStack* known,
                            const WalkStart& start = {}) noexcept;
// Whether a hook's stack is one of the whole walks this thread repeats: repeated_stack()
// (repeated_stack.hpp). keep_repeated_walk() makes a walk one of them: call it with the
// `frames` (`depth` of them) that capture_stack(…, start) returned, the id the caller
// records for them and its record (nullptr: none given); it keeps the walk only when the
// walk cache holds exactly those frames from `start`. Ask only when ask_repeated_walks().
inline bool ask_repeated_walks(const ThreadState& self = t_thread) noexcept {
  return self.ask_repeated_walks;
}
void keep_repeated_walk(const std::uintptr_t* frames, std::uint32_t depth, std::uint32_t max,
                        const WalkStart& start, StackId id, StackRecord* record = nullptr) noexcept;
// `frames`: what capture_stack() filled; `id`: the id the caller records for them (the
// stack table's, in the thread's request's route when it is in one).
void remember_stack_id(const std::uintptr_t* frames, const KnownStack& known, StackId id) noexcept;
// This thread's request changed: the ids its walks' memo knows are the stacks of the route
// before, so none is known any more (the memo holds routed ids, so that a walk whose id it
// knows needs no look at the route).
void forget_stack_ids() noexcept;

// One unwinder alone, for tests and benchmarks: false when it cannot walk this stack
// (frame_rules met a frame without a usable rule; libunwind is not loaded).
enum class Unwinder : std::uint8_t { frame_rules, libunwind, libgcc };
bool capture_stack_with(Unwinder unwinder, std::uintptr_t* frames, std::uint32_t max,
                        std::uint32_t* depth) noexcept;

// Code was unloaded (dlclose): its addresses may be reused by other code, so every cached
// frame rule is dropped.
void forget_frame_rules() noexcept;
std::size_t cached_frame_rules() noexcept;

// For tests: how this thread's walks used the previous walk (walk_cache.hpp): the walks
// the rules finished, and the output frames they took from the cache, checked.
struct WalkCacheUse {
  std::uint64_t walks = 0;
  std::uint64_t reused_frames = 0;
  std::uint64_t memo_hits = 0;  // walks whose stack id was known (capture_stack with KnownStack)
};
WalkCacheUse walk_cache_use() noexcept;
// fork(): the child must not inherit the rule cache's lock held by a vanished thread.
void frame_rules_lock_for_fork() noexcept;
void frame_rules_unlock_after_fork() noexcept;
bool frame_rules_locked() noexcept;

// True when `address` lies in the engine's own code: the liveheap_text section of the object
// this engine is linked into (own_code.hpp), where the hooks are.
bool is_own_code(std::uintptr_t address) noexcept;

}  // namespace liveheap::engine
