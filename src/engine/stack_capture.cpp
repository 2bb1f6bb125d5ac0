// Stack capture for the hooks. First choice: our own walk, one cached FrameRule per return
// address (~0.09 us for 28 frames once warm, where libunwind's unw_backtrace takes ~0.2).
// For stacks with a frame no rule describes (signal frames, PLT stubs): unw_backtrace
// when libunwind can be loaded privately, else libgcc's _Unwind_Backtrace (~2.5 us).
#include "stack_capture.hpp"

#include <atomic>
#include <dlfcn.h>
#include <unwind.h>

#include "engine.hpp"  // fallback_walks
#include "frame_rule_cache.hpp"
#include "own_code.hpp"
#include "stack_table.hpp"
#include "thread_state.hpp"

namespace liveheap::engine {
namespace {

using UnwBacktrace = int (*)(void** buffer, int size);
std::atomic<UnwBacktrace> g_unw_backtrace{nullptr};

FrameRuleCache g_frame_rules;
std::atomic<std::uint64_t> g_fallback_walks{0};  // stacks handed to libunwind or libgcc

// A frame whose rule is not usable yet: the stack is walked by another unwinder.
constexpr std::uint32_t kNeedsOtherUnwinder = UINT32_MAX;
// A step longer than this is taken for a corrupt stack (a thread's stack is 8 MiB by
// default): the walk stops there, as it does at a step that does not go up the stack.
constexpr std::uintptr_t kMaxFrameBytes = std::uintptr_t{1} << 26;

// Per thread, the rule last used at each stack position: a direct-mapped cache indexed by
// the frame's stack address and checked against its code address (so a stale slot is a
// miss, never a wrong rule). Hot paths put the same frames at the same stack addresses
// call after call, so most frames find their rule here with a load that does not wait for
// the return address just read; the shared cache's probe hashes that address first
// (~16 cycles per frame against ~10 here, 28 frames per stack).
struct RecentRules {
  static constexpr std::size_t kSlots = 128;  // 2 KiB of static TLS per thread
  struct Slot {
    std::uintptr_t key;
    std::uint64_t rule;  // FrameRule::pack()
  };
  std::uint32_t generation;  // g_frame_rules' generation the slots belong to
  Slot slots[kSlots];

  Slot& at(std::uintptr_t sp) noexcept { return slots[(sp >> 4) & (kSlots - 1)]; }
};
[[gnu::tls_model("initial-exec")]] constinit thread_local RecentRules t_recent_rules{};

// The shared cache, then the CFI itself (caching what it finds).
[[gnu::noinline]] std::uint64_t shared_rule(FrameRuleCache::View rules, std::uintptr_t key) noexcept {
  if (const std::uint64_t rule = FrameRuleCache::lookup(rules, key)) return rule;
  const std::uint32_t generation = g_frame_rules.generation();
  const FrameRule rule = find_frame_rule(key);
  g_frame_rules.insert(key, rule, generation);
  return rule.pack();
}

// This thread's recent rules, emptied when code was unloaded since it last walked.
RecentRules& recent_rules() noexcept {
  RecentRules& recent = t_recent_rules;
  const std::uint32_t generation = g_frame_rules.generation();
  if (__builtin_expect(recent.generation != generation, 0)) {
    __builtin_memset(recent.slots, 0, sizeof recent.slots);
    recent.generation = generation;
  }
  return recent;
}

// Walks from this function's own frame, caller by caller, writing up to `want` return
// addresses past liveheap's own frames (so no copy drops them afterwards) and hashing them;
// kNeedsOtherUnwinder when a frame has no usable rule. The hot loop is one chain of
// dependent loads per frame (return address, rule, next return address): it reads the
// packed rule's fields in place (FrameRule::kind_of & co.) and keeps other work off that
// chain.
LIVEHEAP_OWN_CODE
std::uint32_t walk_with_frame_rules(std::uintptr_t* frames, std::uint32_t want,
                                    StackHash* hash) noexcept {
  std::uintptr_t pc, sp, bp;
  // The three registers together, at one instruction: the CFI row of that pc matches.
  asm volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2"
               : "=r"(pc), "=r"(sp), "=r"(bp));
  RecentRules& recent = recent_rules();
  const FrameRuleCache::View rules = g_frame_rules.view();
  std::uintptr_t key = pc;  // the innermost frame is at pc itself, not after a call
  std::uint32_t n = 0;
  bool in_own_frames = true;
  while (n < want) {
    RecentRules::Slot& slot = recent.at(sp);
    std::uint64_t bits = slot.rule;
    if (__builtin_expect(slot.key != key, 0)) {
      bits = shared_rule(rules, key);
      slot = {key, bits};
    }
    const FrameRule::Kind kind = FrameRule::kind_of(bits);
    if (__builtin_expect(kind != FrameRule::Kind::step, 0)) {
      if (kind == FrameRule::Kind::outermost) break;
      return kNeedsOtherUnwinder;
    }
    const std::uintptr_t base = FrameRule::cfa_from_rbp_of(bits) ? bp : sp;
    const std::uintptr_t cfa = base + FrameRule::cfa_offset_of(bits);
    if (cfa - sp - 1 >= kMaxFrameBytes) break;  // also cfa <= sp
    const std::uintptr_t return_address = *reinterpret_cast<const std::uintptr_t*>(cfa - 8);
    if (const std::int16_t rbp_slot = FrameRule::rbp_slot_of(bits); rbp_slot != 0)
      bp = *reinterpret_cast<const std::uintptr_t*>(cfa + rbp_slot);
    sp = cfa;
    if (return_address == 0) break;
    key = return_address - 1;  // the call instruction's row
    if (in_own_frames && in_own_section(return_address)) continue;
    in_own_frames = false;
    frames[n++] = return_address;
    hash->add(return_address);
  }
  return n;
}

LIVEHEAP_OWN_CODE
std::uint32_t walk_with_libunwind(std::uintptr_t* frames, std::uint32_t want) noexcept {
  const UnwBacktrace fn = g_unw_backtrace.load(std::memory_order_acquire);
  if (fn == nullptr) return kNeedsOtherUnwinder;
  const int got = fn(reinterpret_cast<void**>(frames), static_cast<int>(want));
  return got > 0 ? static_cast<std::uint32_t>(got) : 0;
}

struct UnwindState {
  std::uintptr_t* frames;
  std::uint32_t max;
  std::uint32_t count;
};

LIVEHEAP_OWN_CODE _Unwind_Reason_Code collect(struct _Unwind_Context* context, void* arg) {
  auto* state = static_cast<UnwindState*>(arg);
  if (state->count >= state->max) return _URC_END_OF_STACK;
  const std::uintptr_t ip = _Unwind_GetIP(context);
  if (ip == 0) return _URC_END_OF_STACK;
  state->frames[state->count++] = ip;
  return _URC_NO_REASON;
}

LIVEHEAP_OWN_CODE
std::uint32_t walk_with_libgcc(std::uintptr_t* frames, std::uint32_t want) noexcept {
  UnwindState state{frames, want, 0};
  _Unwind_Backtrace(collect, &state);
  return state.count;
}

// Our own frames on top (hook, engine, operator new) are dropped by moving the start.
std::uint32_t drop_own_frames(std::uintptr_t* frames, std::uint32_t n, std::uint32_t max) noexcept {
  std::uint32_t first = 0;
  while (first < n && in_own_section(frames[first])) ++first;
  if (n - first > max) n = first + max;
  if (first > 0) __builtin_memmove(frames, frames + first, (n - first) * sizeof(std::uintptr_t));
  return n - first;
}

}  // namespace

void load_unwinder() noexcept {
  if (g_unw_backtrace.load(std::memory_order_acquire) != nullptr) return;
  HookGuard guard;  // dlopen allocates: none of it is a user's allocation
  if (void* lib = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL)) {
    if (auto fn = reinterpret_cast<UnwBacktrace>(dlsym(lib, "unw_backtrace"))) {
      g_unw_backtrace.store(fn, std::memory_order_release);
      return;
    }
  }
}

LIVEHEAP_OWN_CODE
std::uint32_t capture_stack(std::uintptr_t* frames, std::uint32_t max, std::uint64_t* hash) noexcept {
  StackHash walked;
  const std::uint32_t n = walk_with_frame_rules(frames, max, &walked);
  if (n != kNeedsOtherUnwinder) {
    *hash = walked.finish(n);
    return n;
  }
  // The other unwinders start with our own frames: walk further, then drop them.
  g_fallback_walks.fetch_add(1, std::memory_order_relaxed);
  const std::uint32_t want = max + kOwnFramesSlack;
  std::uint32_t m = walk_with_libunwind(frames, want);
  if (m == kNeedsOtherUnwinder) m = walk_with_libgcc(frames, want);
  m = drop_own_frames(frames, m, max);
  *hash = hash_frames(frames, m);
  return m;
}

LIVEHEAP_OWN_CODE
bool capture_stack_with(Unwinder unwinder, std::uintptr_t* frames, std::uint32_t max,
                        std::uint32_t* depth) noexcept {
  const std::uint32_t want = max + kOwnFramesSlack;
  std::uint32_t n = kNeedsOtherUnwinder;
  StackHash unused;
  switch (unwinder) {
    case Unwinder::frame_rules: n = walk_with_frame_rules(frames, max, &unused); break;
    case Unwinder::libunwind: n = walk_with_libunwind(frames, want); break;
    case Unwinder::libgcc: n = walk_with_libgcc(frames, want); break;
  }
  if (n == kNeedsOtherUnwinder) return false;
  *depth = drop_own_frames(frames, n, max);
  return true;
}

bool is_own_code(std::uintptr_t address) noexcept { return in_own_section(address); }

void forget_frame_rules() noexcept { g_frame_rules.clear(); }
std::size_t cached_frame_rules() noexcept { return g_frame_rules.size(); }
std::uint64_t fallback_walks() noexcept { return g_fallback_walks.load(std::memory_order_relaxed); }
void frame_rules_lock_for_fork() noexcept { g_frame_rules.lock_for_fork(); }
void frame_rules_unlock_after_fork() noexcept { g_frame_rules.unlock_after_fork(); }

}  // namespace liveheap::engine
