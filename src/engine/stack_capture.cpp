// Stack capture for the hooks. First choice: our own walk, one cached FrameRule per return
// address (~0.09 us for 28 frames once warm, where libunwind's unw_backtrace takes ~0.2),
// taking the steps the thread's previous walk took where they still hold (walk_cache.hpp).
// For stacks with a frame no rule describes (signal frames, PLT stubs): unw_backtrace
// when libunwind can be loaded privately, else libgcc's _Unwind_Backtrace (~2.5 us).
#include "stack_capture.hpp"

#include <atomic>
#include <cstddef>
#include <dlfcn.h>
#include <unwind.h>

#include "engine.hpp"  // fallback_walks
#include "frame_rule_cache.hpp"
#include "own_code.hpp"
#include "recent_rules.hpp"
#include "repeated_walks.hpp"
#include "stack_table.hpp"
#include "thread_state.hpp"
#include "walk_cache.hpp"
#include "walk_state.hpp"

namespace liveheap::engine {

FrameRuleCache g_frame_rules;

namespace {

using UnwBacktrace = int (*)(void** buffer, int size);
std::atomic<UnwBacktrace> g_unw_backtrace{nullptr};
std::atomic<std::uint64_t> g_fallback_walks{0};  // stacks handed to libunwind or libgcc

// A frame whose rule is not usable yet: the stack is walked by another unwinder.
constexpr std::uint32_t kNeedsOtherUnwinder = UINT32_MAX;
// A step longer than this is taken for a corrupt stack (a thread's stack is 8 MiB by
// default): the walk stops there, as it does at a step that does not go up the stack.
constexpr std::uintptr_t kMaxFrameBytes = std::uintptr_t{1} << 26;

// The shared cache, then the CFI itself (caching what it finds).
// `generation` was read before the walk began: a rule found after a clear is cached under
// its old generation, so it is not (insert drops it).
[[gnu::noinline]] std::uint64_t shared_rule(std::uint32_t generation, std::uintptr_t key) noexcept {
  if (const std::uint64_t rule = FrameRuleCache::lookup(g_frame_rules.view(generation), key)) return rule;
  const FrameRule rule = find_frame_rule(key);
  g_frame_rules.insert(key, rule, generation);
  return rule.pack();
}

// The thread's recent rules (recent_rules.hpp), emptied when code was unloaded since it
// last walked.
RecentRules& recent_rules(RecentRules& recent, std::uint32_t generation) noexcept {
  if (__builtin_expect(recent.generation != generation, 0)) {
    __builtin_memset(recent.slots, 0, sizeof recent.slots);
    recent.generation = generation;
  }
  return recent;
}

// Walks from `start` (a hook's frame), or without one from this function's own frame,
// caller by caller, writing up to `want` return addresses past liveheap's own frames (so
// no copy drops them afterwards), and `*hash` with their hash_frames(); kNeedsOtherUnwinder
// when a frame has no usable rule. The rule steps are one chain of dependent loads per
// frame (return address, rule, next return address): they read the packed rule's fields
// in place (FrameRule::kind_of & co.) and keep other work off that chain. Where the walk
// meets a step of the previous walk (the same code address and rsp), it checks the cached
// steps instead (walk_cache.hpp), as far as they hold.
LIVEHEAP_OWN_CODE
std::uint32_t walk_with_frame_rules(std::uintptr_t* frames, std::uint32_t want, std::uint64_t* hash,
                                    KnownStack* known, const WalkStart& start = {}) noexcept {
  // The hook's registers when it gave them (one rule step to its caller), else this
  // function's own (then liveheap's frames below the hook are walked first).
  const WalkStart begin = start.pc != 0 ? start : here();
  std::uintptr_t sp = begin.sp, bp = begin.bp;
  WalkState* const state = walk_state();
  if (__builtin_expect(state == nullptr, 0)) return kNeedsOtherUnwinder;
  WalkCache& cache = state->cache;
  // A signal handler's walk while this thread was walking: the cache is mid-update.
  if (__builtin_expect(cache.busy, 0)) return kNeedsOtherUnwinder;
  cache.busy = true;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  const std::uint32_t generation = g_frame_rules.generation();
  RecentRules& recent = recent_rules(state->recent, generation);
  cache.check_generation(generation);
  WalkCache::Steps& steps = cache.steps;
  WalkCache::Fresh& fresh = cache.fresh;
  WalkCache::Reused reused[WalkCache::kMaxReused];
  std::uint32_t reused_count = 0;
  const bool rules_alone = cache.rules_alone();
  // The cached step this walk may meet next (the sentinel: none).
  std::uint32_t next = rules_alone ? WalkCache::kSteps : cache.first;
  // The walk's own steps are recorded for as many output frames.
  const std::uint32_t fresh_limit = rules_alone ? 0 : cache.fresh_limit();
  std::uintptr_t key = begin.pc;  // the innermost frame is at pc itself, not after a call
  std::uint32_t n = 0;
  // liveheap's own frames on top (none past a hook's start but a hook called by another)
  // are walked with the rules and not output.
  bool in_own_frames = true;
  bool ended_outermost = false;  // at a frame whose rule says it has no caller
  while (n < want) {
    // Cached steps are in rsp order, and rsp only grows: skip those the walk went past.
    while (steps.sp[next] < sp) ++next;  // stops at the sentinel, sp[kSteps]
    if (steps.sp[next] == sp && steps.key[next] == key &&
        !(in_own_frames && in_own_section(steps.frame[next]))) {
      const std::uint32_t begin = next;
      const std::uint32_t end =
          begin + (want - n) < WalkCache::kSteps ? begin + (want - n) : WalkCache::kSteps;
      std::uint32_t s = begin;
      // The steps' stack words (walk_cache.hpp); the rbp held now only where a rule would
      // read it.
      if (!steps.needs_bp[begin] || bp == steps.bp[begin]) {
        const std::uint32_t checks_end = steps.checks_from[end];
        const WalkCache::Steps::Check* check = steps.check + steps.checks_from[begin];
        if (checks_end == WalkCache::kChecks) {
          check = first_failed_check(check);
        } else {
          const WalkCache::Steps::Check* const last = steps.check + checks_end;
          while (check != last && holds(check)) ++check;
        }
        const auto c = static_cast<std::uint32_t>(check - steps.check);
        s = c < checks_end ? steps.check_step[c] : end;
      }
      if (s > begin) {
        const std::uintptr_t run_bp = bp;
        // rbp as the last step that restored it left it (with none, as it was). A run to
        // the cache's end checked that step's saved rbp (the rules may go on from there:
        // needs_bp[kSteps]), so it is the cached one; a run that ended before did not
        // always, so it is read from its slot, as the rule reads it.
        if (steps.restores[begin] != steps.restores[s]) {
          if (s == WalkCache::kSteps) {
            bp = steps.bp_at_end;
          } else {
            std::uint32_t last = s - 1;
            while (FrameRule::rbp_slot_of(steps.rule[last]) == 0) --last;
            bp = *reinterpret_cast<const std::uintptr_t*>(steps.cfa[last] +
                                                          FrameRule::rbp_slot_of(steps.rule[last]));
          }
        }
        // The frames of a run are copied out after the walk (copy_reused), and not at all
        // when the memo knows the stack; past kMaxReused runs, at once.
        if (reused_count < WalkCache::kMaxReused) reused[reused_count] = {n, n + (s - begin), begin, run_bp};
        else __builtin_memcpy(frames + n, steps.frame + begin, (s - begin) * sizeof(std::uintptr_t));
        ++reused_count;
        n += s - begin;
        in_own_frames = false;
        key = steps.frame[s - 1] - 1;
        sp = steps.cfa[s - 1];
        // At the cache's end, a frame the walk that cached it found outermost (the run
        // checked its return address, so its rule): the rules would stop there too.
        if (s == WalkCache::kSteps && steps.outermost_at_end) {
          ended_outermost = true;
          break;
        }
      }
      // Step s (when there is one) did not check: the rules walk it, and the search goes on
      // from the step after it.
      next = s < WalkCache::kSteps ? s + 1 : s;
      continue;
    }
    RecentRules::Slot& slot = recent.at(sp, key);
    std::uint64_t bits = slot.rule;
    if (__builtin_expect(slot.key != key, 0)) {
      bits = shared_rule(generation, key);
      slot = {key, bits};
    }
    const FrameRule::Kind kind = FrameRule::kind_of(bits);
    if (__builtin_expect(kind != FrameRule::Kind::step, 0)) {
      if (kind == FrameRule::Kind::outermost) {
        ended_outermost = true;
        break;
      }
      std::atomic_signal_fence(std::memory_order_seq_cst);  // the cache's writes before
      cache.busy = false;
      return kNeedsOtherUnwinder;
    }
    const std::uintptr_t base = FrameRule::cfa_from_rbp_of(bits) ? bp : sp;
    const std::uintptr_t cfa = base + FrameRule::cfa_offset_of(bits);
    if (cfa - sp - 1 >= kMaxFrameBytes) break;  // also cfa <= sp
    const std::uintptr_t return_address = *reinterpret_cast<const std::uintptr_t*>(cfa - 8);
    const std::uintptr_t step_sp = sp, step_key = key, step_bp = bp;
    if (const std::int16_t rbp_slot = FrameRule::rbp_slot_of(bits); rbp_slot != 0)
      bp = *reinterpret_cast<const std::uintptr_t*>(cfa + rbp_slot);
    sp = cfa;
    if (return_address == 0) break;
    key = return_address - 1;  // the call instruction's row
    if (in_own_frames && in_own_section(return_address)) continue;
    in_own_frames = false;
    if (n < fresh_limit) {
      fresh.sp[n] = step_sp;
      fresh.key[n] = step_key;
      fresh.bp[n] = step_bp;
      fresh.cfa[n] = cfa;
      fresh.rule[n] = bits;
      fresh.bp_after[n] = bp;
    }
    frames[n++] = return_address;
  }
  const auto copy_reused = [&] {
    for (std::uint32_t k = 0; k < reused_count && k < WalkCache::kMaxReused; ++k)
      __builtin_memcpy(frames + reused[k].out_begin, steps.frame + reused[k].step_begin,
                       (reused[k].out_end - reused[k].out_begin) * sizeof(std::uintptr_t));
  };
  // A walk that ended in one run of cached steps may be one whose id the memo knows; asked
  // before remember() rewrites the steps the run was checked against.
  // Known: no hash needed, and the cache is left as it is (it held this stack's run already).
  if (known != nullptr && reused_count == 1 && reused[0].out_end == n) {
    known->id = cache.recall(frames, n, reused[0].out_begin, reused[0].step_begin, &known->ticket);
    if (known->id != kNoStack) {
      cache.count_walk(n, n - reused[0].out_begin);
      *hash = 0;
      std::atomic_signal_fence(std::memory_order_seq_cst);
      cache.busy = false;
      return n;  // frames[fresh..n) not written: the caller has the id and needs no frames
    }
  }
  copy_reused();
  *hash = rules_alone ? hash_frames(frames, n)
                      : cache.remember(frames, n, reused, reused_count, fresh_limit, ended_outermost);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  cache.busy = false;
  return n;
}

// Whether a walk of at most `want` frames whose steps are those of a walk of `depth` frames
// ends where that one did: at the frame limit, or at the thread's first frame (past which
// it would not go on with the rules).
[[gnu::always_inline]] inline bool ends_as(std::uint32_t depth, bool outermost_at_end,
                                           std::uint32_t want) noexcept {
  return depth == want || (depth < want && outermost_at_end);
}

// Kept walk `p` and spare `k` trade walks; the spare's tag follows the walk it now holds
// (0 for none).
void trade(RepeatedWalks& walks, std::uint32_t p, std::uint32_t k) noexcept {
  RepeatedWalks::Walk* const out = walks.kept[p];
  walks.kept[p] = walks.spare[k];
  walks.spare[k] = out;
  walks.spare_tag[k] = out->held() ? RepeatedWalks::tag_of(out->sp, out->pc) : 0;
  if (walks.last == p) walks.last_walk = walks.kept[p];
}

// Puts the kept walk `p`, which a newer one replaces, among the spares in place of the
// oldest spare (unless it holds none): `p` then holds the oldest spare's walk, to be
// written over.
void put_out(RepeatedWalks& walks, std::uint32_t p) noexcept {
  if (!walks.kept[p]->held()) return;
  const std::uint32_t k = walks.next_spare;
  walks.next_spare = (k + 1) % RepeatedWalks::kSpares;
  trade(walks, p, k);
}

// The spares with this walk's start (their tags say they may); one that is the walk goes
// back among the kept walks in place of the next to go, which takes its place.
LIVEHEAP_OWN_CODE [[gnu::noinline]] const RepeatedWalks::Walk* spare_walk(RepeatedWalks& walks,
                                                                          const WalkStart& start) noexcept {
  for (std::uint32_t may = walks.spares_tagged(RepeatedWalks::tag_of(start.sp, start.pc)); may != 0;
       may &= may - 1) {
    const auto k = static_cast<std::uint32_t>(__builtin_ctz(may));
    RepeatedWalks::Walk* const found = walks.spare[k];
    if (!repeats(*found, start)) continue;
    const std::uint32_t back = walks.next;
    walks.next = (back + 1) % RepeatedWalks::kWalks;
    trade(walks, back, k);
    walks.last = back;
    walks.last_walk = found;
    return found;
  }
  return nullptr;
}

}  // namespace

// The walks but the one known last, in turn; then the spares.
LIVEHEAP_OWN_CODE [[gnu::noinline]] const RepeatedWalks::Walk* another_repeated_walk(
    RepeatedWalks& walks, const WalkStart& start) noexcept {
  for (std::uint32_t i = 1; i < RepeatedWalks::kWalks; ++i) {
    const std::uint32_t k = (walks.last + i) % RepeatedWalks::kWalks;
    RepeatedWalks::Walk* const w = walks.kept[k];
    if (repeats(*w, start)) {
      walks.last = k;
      walks.last_walk = w;
      return w;
    }
  }
  return spare_walk(walks, start);
}

[[gnu::noinline, gnu::cold]] void forget_walks(RepeatedWalks& walks, std::uint64_t key) noexcept {
  walks.empty();
  walks.kept_for = key;
}

void keep_repeated_walk(const std::uintptr_t* frames, std::uint32_t depth, std::uint32_t want,
                        const WalkStart& start, StackId id, StackRecord* record) noexcept {
  WalkState* const state = t_walk_state;
  if (state == nullptr) return;  // walked by another unwinder
  RepeatedWalks& walks = state->repeated;
  if (walks.resting) {
    if (++walks.rested < RepeatedWalks::kRestingWalks) return;
    walks.rested = 0;
    walks.resting = false;
  }
  WalkCache& cache = state->cache;
  if (cache.busy || id == kNoStack || start.pc == 0) return;
  // Walks kept in a row with no walk known in between (the memo's hits count both kinds):
  // the thread's stacks do not repeat.
  if (cache.memo_hits != walks.hits_seen) {
    walks.hits_seen = cache.memo_hits;
    walks.unknown_in_a_row = 0;
  } else if (++walks.unknown_in_a_row >= RepeatedWalks::kUnknownToRest) {
    walks.unknown_in_a_row = 0;
    walks.resting = true;
    t_thread.ask_repeated_walks = false;
    return;
  }
  cache.busy = true;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  const WalkCache::Steps& steps = cache.steps;
  const std::uint32_t first = cache.first;
  const std::uint32_t n = WalkCache::kSteps - first;  // 0: an empty cache
  // The cache's steps go from the hook's frame to where the walk would end, and their
  // frames are `frames`, whose id is `id`: a walk from `start` whose checks hold takes these
  // steps (walk_cache.hpp), so it has these frames. (Compared rather than assumed: what
  // the cache holds after a walk depends on its runs and on what it chose to keep.) And
  // their stack words hold now: a cache left as an earlier walk wrote it may have the same
  // frames and another saved rbp, which would never hold again.
  const std::uint32_t generation = g_frame_rules.generation();
  if (n != 0 && n == depth && ends_as(n, steps.outermost_at_end, want) &&
      cache.generation_plus_one == std::uint64_t{generation} + 1 && steps.sp[first] == start.sp &&
      steps.key[first] == start.pc && (!steps.needs_bp[first] || steps.bp[first] == start.bp) &&
      !in_own_section(steps.frame[first]) &&
      WalkCache::kChecks - steps.checks_from[first] <= RepeatedWalks::kChecks &&
      __builtin_memcmp(frames, steps.frame + first, n * sizeof(std::uintptr_t)) == 0 &&
      first_failed_check(steps.check + steps.checks_from[first]) == steps.check + WalkCache::kChecks) {
    // The walks are those of this key only: a walk asked for later ends where it ended here
    // (ends_as above) as long as its key holds.
    if (const std::uint64_t key = RepeatedWalks::key_for(generation, want); walks.kept_for != key)
      forget_walks(walks, key);
    const std::uint32_t p = walks.next;
    walks.next = (p + 1) % RepeatedWalks::kWalks;
    put_out(walks, p);
    RepeatedWalks::Walk& w = *walks.kept[p];
    w.sp = start.sp;
    w.pc = start.pc;
    w.bp = start.bp;
    w.needs_bp = steps.needs_bp[first];
    w.id = id;
    w.record = record;
    w.checks = WalkCache::kChecks - steps.checks_from[first];
    __builtin_memcpy(w.check, steps.check + steps.checks_from[first],
                     w.checks * sizeof(RepeatedWalks::Check));
    w.seal();
    t_thread.ask_repeated_walks = true;
  }
  std::atomic_signal_fence(std::memory_order_seq_cst);
  cache.busy = false;
}

namespace {

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

namespace {

// When the rules cannot walk a frame. The other unwinders start with our own frames: walk
// further, then drop them. Apart, so that capture_stack() saves no registers for it.
LIVEHEAP_OWN_CODE [[gnu::noinline, gnu::cold]] std::uint32_t capture_with_other_unwinders(
    std::uintptr_t* frames, std::uint32_t max, std::uint64_t* hash) noexcept {
  g_fallback_walks.fetch_add(1, std::memory_order_relaxed);
  const std::uint32_t want = max + kOwnFramesSlack;
  std::uint32_t m = walk_with_libunwind(frames, want);
  if (m == kNeedsOtherUnwinder) m = walk_with_libgcc(frames, want);
  m = drop_own_frames(frames, m, max);
  *hash = hash_frames(frames, m);
  return m;
}

}  // namespace

LIVEHEAP_OWN_CODE
std::uint32_t capture_stack(std::uintptr_t* frames, std::uint32_t max, std::uint64_t* hash, KnownStack* known,
                            const WalkStart& start) noexcept {
  const std::uint32_t n = walk_with_frame_rules(frames, max, hash, known, start);
  if (n != kNeedsOtherUnwinder) [[likely]]
    return n;
  return capture_with_other_unwinders(frames, max, hash);
}

LIVEHEAP_OWN_CODE
std::uint32_t capture_stack(std::uintptr_t* frames, std::uint32_t max, std::uint64_t* hash) noexcept {
  return capture_stack(frames, max, hash, nullptr);
}

void remember_stack_id(const std::uintptr_t* frames, const KnownStack& known, StackId id) noexcept {
  WalkState* const state = t_walk_state;
  if (known.ticket.slot >= WalkCache::kMemoSlots || id == kNoStack || state == nullptr) return;
  WalkCache& cache = state->cache;
  if (cache.busy) return;  // a signal handler's, in the middle of this thread's walk
  cache.busy = true;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  cache.memoize(frames, known.ticket, id);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  cache.busy = false;
}

void forget_stack_ids() noexcept {
  WalkState* const state = t_walk_state;
  if (state == nullptr) return;                                   // none known
  for (WalkCache::MemoEntry& e : state->cache.memo) e.clock = 0;  // 0: empty
  state->repeated.kept_for = 0;  // the walks are emptied before the next is asked or kept
}

LIVEHEAP_OWN_CODE
bool capture_stack_with(Unwinder unwinder, std::uintptr_t* frames, std::uint32_t max,
                        std::uint32_t* depth) noexcept {
  const std::uint32_t want = max + kOwnFramesSlack;
  std::uint32_t n = kNeedsOtherUnwinder;
  std::uint64_t unused = 0;
  switch (unwinder) {
    case Unwinder::frame_rules: n = walk_with_frame_rules(frames, max, &unused, nullptr); break;
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
WalkCacheUse walk_cache_use() noexcept {
  const WalkState* const state = t_walk_state;
  if (state == nullptr) return {};
  return {state->cache.walks, state->cache.reused_frames, state->cache.memo_hits};
}
std::uint64_t fallback_walks() noexcept { return g_fallback_walks.load(std::memory_order_relaxed); }
void frame_rules_lock_for_fork() noexcept { g_frame_rules.lock_for_fork(); }
void frame_rules_unlock_after_fork() noexcept { g_frame_rules.unlock_after_fork(); }
bool frame_rules_locked() noexcept { return g_frame_rules.any_locked(); }

}  // namespace liveheap::engine
