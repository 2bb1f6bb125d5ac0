// Recording: stack capture, interning, the live table (exact) or the sample region
// (sampled), and the running totals a snapshot reads.
#include "engine.hpp"

#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <sys/single_threaded.h>

#include "fork_repairs.hpp"
#include "hosted_samples.hpp"
#include "live_table.hpp"
#include "next_threshold.hpp"
#include "next_usable.hpp"
#include "own_code.hpp"
#include "pages.hpp"
#include "peak_signal.hpp"
#include "python_frame_table.hpp"
#include "python_runtime.hpp"
#include "python_stacks.hpp"
#include "request_route.hpp"
#include "routed_stacks.hpp"
#include "sampler.hpp"
#include "spin_lock.hpp"
#include "stack_capture.hpp"
#include "stack_table.hpp"
#include "walk_state.hpp"
#include "young_table.hpp"
#include "young_tables.hpp"

namespace liveheap::engine {

constinit thread_local ThreadState t_thread;
std::atomic<Mode> g_mode{Mode::off};

namespace {

// The tracker-memory cap (Settings::max_memory) and what it refused.
std::atomic<std::int64_t> g_max_memory{kDefaultMaxMemory};
std::atomic<bool> g_cap_reached{false};

// Room for `bytes` more of the tracker's memory under `limit`; notes when there is none.
bool room_under(std::int64_t limit, std::size_t bytes) noexcept {
  if (own_memory() + static_cast<std::int64_t>(bytes) <= limit) return true;
  g_cap_reached.store(true, std::memory_order_relaxed);
  return false;
}
// New stacks stop at 3/4 of the cap: the last quarter is the live table's, whose entries
// cannot fold (a block without one is lost to the reports), while a stack can.
bool stack_room(std::size_t bytes) noexcept {
  return room_under(g_max_memory.load(std::memory_order_relaxed) / 4 * 3, bytes);
}
bool live_room(std::size_t bytes) noexcept {
  return room_under(g_max_memory.load(std::memory_order_relaxed), bytes);
}

// Tables live in static storage (constant-initialized, usable before any constructor
// runs); their arrays come from mmap.
constinit StackTable g_stacks{stack_room};
constinit LiveTable g_live{live_room};  // exact mode: traced blocks
// Exact mode: blocks allocated under an ignore scope. Never refused: it is what counts the
// tracker's own allocations, which happen whether it has room or not.
constinit LiveTable g_own;
// The stack that allocations fold into when theirs cannot be interned (kOverCapFrame).
std::atomic<StackId> g_fold_stack{kNoStack};

// Traced bytes, one counter per thread on a line of its own (an atomic add on one shared
// counter from every allocation and free was the largest cost of exact mode with two
// threads). Threads beyond kThreadSlots share the last slot with atomic adds.
// A slot counts `bytes - cleared`. Its thread adds to `bytes` with a plain load and store,
// so nothing else may write it: a clear that stored 0 there could be overwritten by the
// thread's next add, leaving everything before the clear counted for good. Clears write
// `cleared` instead (they are serialized: engine.hpp).
constexpr std::uint32_t kThreadSlots = kOwnerSlots;
struct alignas(64) CurrentSlot {
  std::atomic<std::int64_t> bytes{0};
  std::atomic<std::int64_t> cleared{0};
  // Sampled mode's, on the thread's own line as well (with two threads sampling, one shared
  // counter of each bounced between their cores at every sample): the samples it counted
  // less those it took off (negative when it frees others' samples: the sum is the count),
  // and its SampleCounting scopes in flight.
  std::atomic<std::int64_t> live_samples{0};
  std::atomic<std::uint32_t> counting{0};
  std::int64_t counted() const noexcept {
    return bytes.load(std::memory_order_relaxed) - cleared.load(std::memory_order_relaxed);
  }
};
CurrentSlot g_current[kThreadSlots + 1];
std::atomic<std::uint32_t> g_slots_taken{0};
alignas(64) std::atomic<std::int64_t> g_peak{0};
// With several threads the peak is checked after each kPeakCheckBytes of a thread's growth
// (so it may read low by less than that per thread); with one thread, at every allocation,
// against g_high: that thread's highest count since the peak was reset, or lower, down to
// the peak recorder's mark, so that the one compare finds a new high and a crossing of the
// mark alike. g_peak is raised to g_high before g_high is lowered (traced() reads both).
constexpr std::int64_t kPeakCheckBytes = 64 * 1024;
std::atomic<std::int64_t> g_high{0};
// The traced bytes past which the peak recorder wants to look (set_peak_mark).
std::atomic<std::int64_t> g_peak_mark{kNoPeakMark};
std::atomic<std::int64_t> g_own_bytes{0};
std::atomic<std::uint64_t> g_dropped{0};
std::atomic<std::int64_t> g_dropped_bytes{0};
std::atomic<std::uint64_t> g_folded{0};
std::atomic<std::int64_t> g_folded_bytes{0};
// Bumped by start/stop/clear: samples counted in an older session are not uncounted.
std::atomic<std::uint32_t> g_session{1};
// Sampled mode's counting against a clear. A sample is added to the totals (allocation) or
// taken off them (free) inside a SampleCounting scope, after a check that no clear is
// running and the session is still its own. A clear raises g_sample_clearing, bumps the
// session, waits for the scopes in flight, zeroes the totals, then lowers the flag. So each
// add or take-off is made before the zero (and zeroed with the rest) or not at all: a
// sample taken while a clear runs is not counted. (An add checked afterwards and taken back
// could land on either side of the zero: off by a sample's weight for good.) Samples are
// rare, one per sample interval: two locked instructions each, on the thread's own line
// (CurrentSlot::counting; SampleCounting below).
std::atomic<bool> g_sample_clearing{false};
std::atomic<std::uint64_t> g_sampler_threads{0};                // arrival order of threads this session
constexpr std::uint64_t kOwnThreadsStream = ~std::uint64_t{0};  // see pass_sample_point
Settings g_settings;            // written by start/stop only, before g_mode publishes it
bool g_started_before = false;  // by start only (serialized)

// This thread's slot, taken in the order threads first record something. It and the
// counting below (add_to_stack, add_current, add_traced, sub_traced, add_to_totals,
// count_block) run on every allocation and free: inlined, for 54 instructions a pair less
// than as calls, and add_to_totals looks the slot up once for both of its adds (12 less
// again).
[[gnu::always_inline]] inline std::uint32_t thread_slot(ThreadState& self = t_thread) noexcept {
  std::uint32_t& slot = self.slot;
  if (slot == 0) {
    // seq_cst, and the load of for_each_taken_slot(): a clear that waits for the counting
    // scopes of the slots taken sees every slot taken before a scope that missed its flag.
    const std::uint32_t n = g_slots_taken.fetch_add(1, std::memory_order_seq_cst);
    slot = (n < kThreadSlots ? n : kThreadSlots) + 1;
  }
  return slot - 1;
}

// The slots a sum over threads reads: those taken, and the shared last one.
template <typename Visit>
void for_each_taken_slot(Visit visit) noexcept {
  const std::uint32_t taken = g_slots_taken.load(std::memory_order_seq_cst);
  for (std::uint32_t i = 0; i < taken && i < kThreadSlots; ++i) visit(g_current[i]);
  visit(g_current[kThreadSlots]);
}

// A sample's counting in flight (see g_sample_clearing), on this thread's slot.
class SampleCounting {
 public:
  SampleCounting() noexcept : counting_(g_current[thread_slot()].counting) {
    counting_.fetch_add(1, std::memory_order_seq_cst);
  }
  ~SampleCounting() { counting_.fetch_sub(1, std::memory_order_release); }
  SampleCounting(const SampleCounting&) = delete;
  SampleCounting& operator=(const SampleCounting&) = delete;

 private:
  std::atomic<std::uint32_t>& counting_;
};

// Live samples counted by this thread (`by`: +1) or taken off (-1).
void add_live_samples(std::int64_t by) noexcept {
  g_current[thread_slot()].live_samples.fetch_add(by, std::memory_order_relaxed);
}

std::int64_t live_samples() noexcept {
  std::int64_t sum = 0;
  for_each_taken_slot([&](const CurrentSlot& s) { sum += s.live_samples.load(std::memory_order_relaxed); });
  return sum;
}

// Adds to this thread's copy of the stack's totals (`bytes` and `count` positive on either
// side). The owner of a stack adds to its inline totals with plain loads and stores, as a
// thread to its traced bytes: nothing else writes them (StackTable::add).
// `known`: the id's record when the caller has it (a kept walk's), else looked up.
template <Side side>
[[gnu::always_inline]] inline void add_to_stack(StackId id, std::int64_t bytes, std::int64_t count,
                                                std::uint32_t slot = thread_slot(),
                                                StackRecord* known = nullptr) noexcept {
  if (StackRecord* r = known != nullptr ? known : g_stacks.record(id))
    g_stacks.add<side>(r, slot, bytes, count);
}

std::int64_t current_bytes() noexcept {
  // A clear in exact mode takes what it uncounted off slot 0 (any slot would do for the
  // sum), the first taken: with none taken, nothing was ever counted or uncounted.
  std::int64_t sum = 0;
  for_each_taken_slot([&](const CurrentSlot& s) { sum += s.counted(); });
  return sum;
}

void raise_peak(std::int64_t now) noexcept {
  std::int64_t peak = g_peak.load(std::memory_order_relaxed);
  while (now > peak && !g_peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}

// The traced bytes are `now` at a check: past the recorder's mark, it is woken.
void check_peak_mark(std::int64_t now) noexcept {
  if (now > g_peak_mark.load(std::memory_order_seq_cst)) peak_signal::signal();
}

// The only traced thread passed g_high: a new high, or a crossing of the mark it was
// lowered to. Out of line: in a steady heap it is not called at all.
[[gnu::noinline]] void passed_high(std::int64_t now) noexcept {
  // A CAS, not a store: where set_peak_mark() lowered it meanwhile, the CAS reads that,
  // and the mark read after it is the new one.
  std::int64_t high = g_high.load(std::memory_order_relaxed);
  while (now > high && !g_high.compare_exchange_weak(high, now, std::memory_order_seq_cst)) {
  }
  check_peak_mark(now);
}

// The peak and the single thread's high restart at `now` (clear, reset_peak).
void reset_high(std::int64_t now) noexcept {
  g_peak.store(now, std::memory_order_relaxed);
  g_high.store(now, std::memory_order_seq_cst);
}

// Adds `bytes` (negative: freed) to this thread's share of the traced bytes (`slot`: its
// thread_slot()); returns it.
[[gnu::always_inline]] inline CurrentSlot& add_current(std::int64_t bytes, std::uint32_t slot) noexcept {
  std::atomic<std::int64_t>& mine = g_current[slot].bytes;
  if (slot < kThreadSlots)  // ours alone: no read-modify-write needed
    mine.store(mine.load(std::memory_order_relaxed) + bytes, std::memory_order_relaxed);
  else mine.fetch_add(bytes, std::memory_order_relaxed);
  return g_current[slot];
}

// Traced bytes freed: a free never raises the peak. Apart from add_traced(), so that no
// branch on the sign is shared by allocations and frees (in a server's irregular mix it
// was mispredicted ~87 times a request).
[[gnu::always_inline]] inline void sub_traced(std::int64_t bytes, std::uint32_t slot) noexcept {
  add_current(-bytes, slot);
}

// Traced bytes allocated (or kept after all): the current figure, then the peak.
[[gnu::always_inline]] inline void add_traced(std::int64_t bytes, std::uint32_t slot = thread_slot(),
                                              ThreadState& self = t_thread) noexcept {
  const CurrentSlot& mine = add_current(bytes, slot);
  if (g_slots_taken.load(std::memory_order_relaxed) == 1) {
    // The only thread that ever traced: its slot (slot 0, where a clear also takes off what
    // it uncounted) is the whole current figure (the shared last slot is used past
    // kThreadSlots threads only), so only a new high needs the CAS.
    const std::int64_t now = mine.counted();
    if (now > g_high.load(std::memory_order_relaxed)) passed_high(now);
    return;
  }
  std::int64_t& growth = self.growth_since_peak_check;
  growth += bytes;
  if (growth >= kPeakCheckBytes) {
    growth = 0;
    const std::int64_t now = current_bytes();
    raise_peak(now);
    check_peak_mark(now);
  }
}

// Bytes and blocks (in 1/kCountUnit; a sample's are weighted) allocated or freed, on their
// stack's totals and the traced bytes.
template <Side side>
[[gnu::always_inline]] inline void add_to_totals(StackId stack, std::int64_t bytes, std::int64_t count,
                                                 StackRecord* known = nullptr,
                                                 ThreadState& self = t_thread) noexcept {
  const std::uint32_t slot = thread_slot(self);  // looked up once: the compiler reloads it
  add_to_stack<side>(stack, bytes, count, slot, known);
  if constexpr (side == Side::alloc) add_traced(bytes, slot, self);
  else sub_traced(bytes, slot);
}

// One block allocated or freed.
template <Side side>
[[gnu::always_inline]] inline void count_block(StackId stack, std::uint64_t size,
                                               StackRecord* known = nullptr,
                                               ThreadState& self = t_thread) noexcept {
  add_to_totals<side>(stack, static_cast<std::int64_t>(size), kCountUnit, known, self);
}

// A stale entry (its free was never seen) that an insert replaced: uncount it. The test
// inline, the rare work out of line: every traced allocation asks.
// By value: a reference would take the caller's block out of registers on every allocation.
[[gnu::noinline, gnu::cold]] void uncount_stale(LiveBlock old) noexcept {
  count_block<Side::freed>(old.stack, old.size);
}
inline void uncount_replaced(LiveBlock old) noexcept {
  if (old.stack != kNoStack) [[unlikely]]
    uncount_stale(old);
}

void count_dropped(std::int64_t bytes) noexcept {
  g_dropped.fetch_add(1, std::memory_order_relaxed);
  g_dropped_bytes.fetch_add(bytes, std::memory_order_relaxed);
}

// A sample the region had no room for: dropped at the weight it was drawn at.
void count_dropped_sample(std::size_t size) noexcept {
  count_dropped(sample_weight(size, inverse_probability(size, g_settings.sample_interval)).bytes);
}

void count_folded(std::int64_t bytes) noexcept {
  g_folded.fetch_add(1, std::memory_order_relaxed);
  g_folded_bytes.fetch_add(bytes, std::memory_order_relaxed);
}

// The stack allocations fold into, interned before the first stack that could be refused
// (whatever the cap): not at start, so that a process that never samples never maps the
// stack table. Threads racing here intern the same one-frame stack: one id.
[[gnu::noinline]] void intern_fold_stack() noexcept {
  g_fold_stack.store(g_stacks.find_or_insert(&kOverCapFrame, 1, false), std::memory_order_relaxed);
}

// Inside a request: which stack `stack` becomes in each route (routed_stacks.hpp).
[[gnu::tls_model("initial-exec")]] constinit thread_local RoutedStacks t_routed_stacks{};

// `stack` with `route`'s frame outermost, interned on first sight; `stack` itself when that
// cannot be interned (past the cap: the block keeps its stack and loses its route).
[[gnu::noinline]] StackId routed_stack(StackId stack, RouteId route) noexcept {
  if (const StackId known = t_routed_stacks.find(stack, route); known != kNoStack) return known;
  const StackRecord* r = g_stacks.record(stack);
  if (r == nullptr) return stack;
  std::uintptr_t frames[kMaxFramesCapture + 1];
  const std::uint32_t depth = r->depth;
  if (depth == 0 || depth > kMaxFramesCapture) return stack;
  StackTable::frames(r, frames);
  if (is_route_frame(frames[depth - 1])) return stack;
  frames[depth] = route_frame(route);
  const StackId routed = g_stacks.find_or_insert(frames, depth + 1);
  if (routed == kNoStack) return stack;
  t_routed_stacks.keep(stack, route, routed);
  return routed;
}

// The stack in this thread's request, if it is in one.
[[gnu::always_inline]] inline StackId in_route(StackId stack) noexcept {
  const RouteId route = thread_route();
  if (route == kNoRoute) [[likely]]
    return stack;
  return routed_stack(stack, route);
}

// A captured stack's id, and whether it is the over-the-cap stack's for want of room.
// Returned by value, in registers: a flag written through a pointer would live in the
// hook's frame, stored and loaded on every allocation. `record`: the id's, when the capture
// had it (a kept walk's, or the one looked up to keep the walk; nullptr: looked up when counted).
struct Interned {
  StackId stack = kNoStack;
  bool folded = false;
  StackRecord* record = nullptr;
};

// In a process running CPython: the stack of `native` (`depth` return addresses, as
// captured, `hash` theirs) with its evaluator frames replaced by this thread's Python frames
// (python_stacks.hpp), in the thread's route; the native stack alone when they cannot be
// read, placed or interned; the over-the-cap stack (folded) when neither can be.
// The memo is never written here: one native stack runs many Python lines.
// Every evaluator frame must be counted against the runs: one not recognised (in a `.cold`
// part) then makes the counts disagree and the stack stays native, where runs placed on the
// evaluator frames of a stack cut at the frame limit would each be one off. So a stack the
// walk cut is walked again whole, up to kMaxFramesCapture, from this function's own frame
// (the engine's frames above the hook's caller are own code, dropped): the hook's registers
// are not kept for it, which would cost every traced allocation a saved register. Native
// frames past the limit are still left out of what is kept; a stack still cut stays native.
LIVEHEAP_OWN_CODE [[gnu::noinline]] Interned python_stack(const std::uintptr_t* native, std::uint32_t depth,
                                                          std::uint64_t hash,
                                                          const PythonRuntime& py) noexcept {
  const std::uint32_t limit = g_settings.max_frames;
  std::uintptr_t frames[kMaxFramesCapture];
  std::uintptr_t whole[kMaxFramesCapture + kOwnFramesSlack];
  const std::uintptr_t* walked = native;
  std::uint32_t walked_depth = depth;
  if (depth >= limit) {
    std::uint64_t unused = 0;
    walked_depth = capture_stack(whole, kMaxFramesCapture, &unused, nullptr);
    walked = whole;
  }
  if (walked_depth < kMaxFramesCapture)  // whole
    if (const std::uint32_t n =
            merge_python_frames(py, walked, walked_depth, limit, frames, kMaxFramesCapture))
      if (const StackId merged = g_stacks.find_or_insert(frames, n); merged != kNoStack)
        return {in_route(merged)};
  if (const StackId stack = g_stacks.find_or_insert(native, depth, hash); stack != kNoStack)
    return {in_route(stack)};
  return {g_fold_stack.load(std::memory_order_relaxed), true};
}

// The stack's id (in this thread's request's route, if any); when it cannot be interned,
// the over-the-cap stack's (folded), or kNoStack when even that one does not exist.
// The walk memo holds the ids in the route (a change of route empties it, request_route.cpp):
// a walk whose id it knows costs nothing more for routes, inside a request or not, nor for
// Python frames outside CPython.
LIVEHEAP_OWN_CODE Interned capture_and_intern(const WalkStart& start) noexcept {
  std::uintptr_t frames[kMaxFramesCapture + kOwnFramesSlack];
  std::uint64_t hash = 0;
  KnownStack known;
  const std::uint32_t depth = capture_stack(frames, g_settings.max_frames, &hash, &known, start);
  if (known.id != kNoStack) return {known.id};
  if (g_fold_stack.load(std::memory_order_relaxed) == kNoStack) [[unlikely]]
    intern_fold_stack();
  if (const PythonRuntime* py = python_runtime()) [[unlikely]]
    return python_stack(frames, depth, hash, *py);
  const StackId stack = g_stacks.find_or_insert(frames, depth, hash);
  if (stack != kNoStack) [[likely]] {
    const StackId routed = in_route(stack);
    remember_stack_id(frames, known, routed);
    StackRecord* const record = g_stacks.record(routed);
    keep_repeated_walk(frames, depth, g_settings.max_frames, start, routed, record);
    return {routed, false, record};
  }
  return {g_fold_stack.load(std::memory_order_relaxed), true};
}

void record_own(void* p, std::size_t size) noexcept {
  LiveBlock replaced;
  if (g_own.insert(reinterpret_cast<std::uintptr_t>(p), {size, kNoStack}, &replaced))
    g_own_bytes.fetch_add(static_cast<std::int64_t>(size - replaced.size), std::memory_order_relaxed);
}

// The thread's young table (young_tables.hpp), asked for on its first traced block and,
// while it has none, again after each table a thread hands back: nullptr when none is free
// and the cap has no room for another.
[[gnu::noinline]] YoungTable* take_young_table(ThreadState& self) noexcept {
  if (self.young_asked == kNoMoreYoung) return nullptr;
  self.young_asked = young_table_releases() + 1;  // before the search: a release during it asks again
  return self.young = adopt_young_table(live_room);
}

// A young block its thread's next one needed the slot of: into the live table; without
// room there, untraced from now on (off its stack's totals, counted as dropped).
void move_to_live(std::uintptr_t ptr, const LiveBlock& b) noexcept {
  LiveBlock replaced;
  if (g_live.insert(ptr, b, &replaced)) {
    uncount_replaced(replaced);
    return;
  }
  count_block<Side::freed>(b.stack, b.size);
  count_dropped(static_cast<std::int64_t>(b.size));
}

// A traced block into the thread's young table, or the live table.
[[gnu::always_inline]] inline bool record_live(ThreadState& self, std::uintptr_t ptr, LiveBlock block,
                                               LiveBlock* replaced) noexcept {
  YoungTable* young = self.young;
  if (young == nullptr && self.young_asked != young_table_releases() + 1) [[unlikely]]
    young = take_young_table(self);
  if (young != nullptr && young->insert(ptr, block, replaced, move_to_live)) [[likely]]
    return true;
  return g_live.insert(ptr, block, replaced);
}

[[gnu::always_inline]] LIVEHEAP_OWN_CODE inline void record_traced(ThreadState& self, void* p,
                                                                   std::size_t size,
                                                                   const WalkStart& start) noexcept {
  // The stack of one of the thread's kept walks again, its id and record known: asked
  // before the full capture, which sets up a frame buffer of its own.
  Interned interned;
  if (start.pc != 0 && ask_repeated_walks(self)) {
    const RepeatedStack known = repeated_stack(g_settings.max_frames, start);
    interned = {known.id, false, known.record};
  }
  if (interned.stack == kNoStack) interned = capture_and_intern(start);
  const auto [stack, folded, record] = interned;
  LiveBlock replaced;
  if (stack == kNoStack ||
      !record_live(self, reinterpret_cast<std::uintptr_t>(p), {size, stack}, &replaced)) {
    count_dropped(static_cast<std::int64_t>(size));
    return;
  }
  if (folded) count_folded(static_cast<std::int64_t>(size));
  count_block<Side::alloc>(stack, size, record, self);
  uncount_replaced(replaced);
}

// Calls fn(totals) for each copy of a stack's totals: the inline one, the shared ones and
// the side totals.
template <typename Record, typename Fn>
void for_each_copy(Record* r, Fn&& fn) noexcept {
  fn(r->totals);
  if (SharedTotals* shared = r->shared.load(std::memory_order_acquire))
    for (unsigned i = 0; i < kSharedSlots; ++i) fn(shared[i].totals);
  if (const StackTotals* side = g_stacks.side_totals_if_any(r->id)) fn(const_cast<StackTotals&>(*side));
}

// Sampled mode's clear: live totals to zero, cumulative ones kept (scrapers take deltas of
// them): whatever is live now counts as freed. (Samples of the session before are never
// uncounted: sample_free() checks the session.)
void zero_stack_totals() noexcept {
  const std::uint32_t n = g_stacks.size();
  for (StackId id = 1; id <= n; ++id) {
    if (StackRecord* r = g_stacks.record(id)) {
      for_each_copy(r, [](StackTotals& t) {
        t.freed_bytes.store(t.alloc_bytes.load(std::memory_order_relaxed), std::memory_order_relaxed);
        t.freed_count.store(t.alloc_count.load(std::memory_order_relaxed), std::memory_order_relaxed);
      });
    }
  }
}

// A block a clear took out of the live table comes off its stack's totals and the traced
// bytes as its free would have (a block recorded meanwhile is counted as usual): the
// totals never disagree with the table, whatever the host does during the clear. Zeroing
// the totals instead lost every block recorded between its shard's clear and the zeroing,
// and each of their frees then took bytes off that were no longer counted.
void uncount_cleared(void* uncounted_bytes, const LiveBlock& b) noexcept {
  if (StackRecord* r = g_stacks.record(b.stack)) {
    // Any copy of the totals but the owner's inline one will do (readers sum them): the
    // owner adds to that one without a locked instruction, and could overwrite this add.
    StackTotals& side = g_stacks.side_totals(b.stack, r);
    side.freed_bytes.fetch_add(static_cast<std::int64_t>(b.size), std::memory_order_relaxed);
    side.freed_count.fetch_add(kCountUnit, std::memory_order_relaxed);
  }
  *static_cast<std::int64_t*>(uncounted_bytes) += static_cast<std::int64_t>(b.size);
}

// Forget everything: a new session. `was`: the mode of the session that ends. Samples
// still alive keep their memory but are no longer counted (their session is over).
void empty_tables(Mode was) noexcept {
  if (was == Mode::sampled) g_sample_clearing.store(true, std::memory_order_seq_cst);
  g_session.fetch_add(1, std::memory_order_seq_cst);
  g_sampler_threads.store(0, std::memory_order_relaxed);
  std::int64_t uncounted = 0;
  // The young tables first: a block moved out meanwhile lands in g_live before its clear.
  for_each_young_table([&](YoungTable& t) { t.clear(uncount_cleared, &uncounted); });
  g_live.clear(uncount_cleared, &uncounted);
  g_current[0].cleared.fetch_add(uncounted, std::memory_order_relaxed);
  g_own.clear(
      [](void*, const LiveBlock& b) {
        g_own_bytes.fetch_sub(static_cast<std::int64_t>(b.size), std::memory_order_relaxed);
      },
      nullptr);
  if (was == Mode::sampled) {
    // The flag is up and the session bumped (above): counting in flight finishes, and
    // none starts until the flag is down.
    for_each_taken_slot([](const CurrentSlot& s) {
      for (int spins = 0; s.counting.load(std::memory_order_seq_cst) != 0; ++spins) spin_turn(spins);
    });
    zero_stack_totals();
    for (CurrentSlot& slot : g_current) {
      slot.cleared.store(slot.bytes.load(std::memory_order_relaxed), std::memory_order_relaxed);
      slot.live_samples.store(0, std::memory_order_relaxed);
    }
    g_sample_clearing.store(false, std::memory_order_seq_cst);
  }
  reset_high(current_bytes());
}

// A fork from a signal handler that interrupted the only thread inside the engine: the lock
// it holds would never be released while we wait for it, where the bare program's fork,
// single-threaded, takes no allocator lock. In a single-threaded process a held engine lock
// can only be that thread's own: then no lock is taken, the child traces nothing, and the
// interrupted call, resumed in both processes once the handler returns, releases its lock.
// (In a multi-threaded process glibc's fork takes the allocator's locks, and a fork from a
// handler that interrupted malloc hangs, bare or not.) Costs the allocation path nothing.
bool g_fork_interrupted = false;  // written only by the forking thread, between its handlers

bool engine_lock_held() noexcept {
  return g_stacks.any_locked() || g_live.any_locked() || g_own.any_locked() || region_locked() ||
         frame_rules_locked() || python_frames_locked();
}

// fork(): take every engine lock so the child never inherits one held mid-update by a
// thread that does not exist there.
void before_fork() noexcept {
  g_fork_interrupted = __libc_single_threaded && engine_lock_held();
  if (g_fork_interrupted) return;
  g_stacks.lock_for_fork();
  g_live.lock_for_fork();
  g_own.lock_for_fork();
  region_lock_for_fork();
  frame_rules_lock_for_fork();
  python_frames_lock_for_fork();
}
void after_fork() noexcept {
  if (g_fork_interrupted) {
    g_fork_interrupted = false;
    return;
  }
  python_frames_unlock_after_fork();
  frame_rules_unlock_after_fork();
  region_unlock_after_fork();
  g_own.unlock_after_fork();
  g_live.unlock_after_fork();
  g_stacks.unlock_after_fork();
}

// free() hands the engine every block in exact mode, else those that may be samples
// (g_free_mask, sample_region.hpp). Widened before exact mode begins (a block it tracks is
// never freed past it), narrowed after it ends (a free in between finds the mode off).
void set_free_filter(Mode mode) noexcept {
  __atomic_store_n(&g_free_mask, mode == Mode::exact ? 0 : kSampleAddressBits, __ATOMIC_SEQ_CST);
}

// First of all constructors (101): a child's handlers run in registration order, and those
// registered later (the admin server's, which allocate in the child) need these locks free.
// The child has only the forking thread: no sample counting or clear is in flight there.
void after_fork_in_child() noexcept {
  if (g_fork_interrupted) {
    g_mode.store(Mode::off, std::memory_order_seq_cst);
    set_free_filter(Mode::off);
    g_fork_interrupted = false;
    run_fork_repairs();  // tracking is off in this child, and its modules' locks free
    return;
  }
  for_each_taken_slot([](CurrentSlot& s) { s.counting.store(0, std::memory_order_relaxed); });
  g_sample_clearing.store(false, std::memory_order_relaxed);
  walk_state_after_fork_in_child();
  after_fork();
  free_young_tables_of_other_threads(t_thread.young);
  // A block another thread was moving out of its young table when the fork came.
  for_each_young_table(
      [](YoungTable& t) { t.repair_after_fork([](std::uintptr_t ptr) { return g_live.contains(ptr); }); });
  region_after_fork_in_child();
  run_fork_repairs();
}
[[gnu::constructor(101)]] void register_fork_handlers() noexcept {
  pthread_atfork(before_fork, after_fork, after_fork_in_child);
}

}  // namespace

bool start(const Settings& settings) noexcept {
  g_mode.store(Mode::off, std::memory_order_seq_cst);
  set_free_filter(Mode::off);
  if (settings.mode == Mode::sampled && !reserve_sample_region()) return false;
  find_python();  // before tracing: its dlsym calls allocate
  prepare_young_table_release();
  // The first session finds every table as the loader made it: nothing to empty (and
  // nothing touched: a process that never allocates much pays no page for it).
  if (g_started_before) empty_tables(g_settings.mode);
  g_started_before = true;
  g_settings = settings;
  g_max_memory.store(settings.max_memory, std::memory_order_relaxed);
  set_free_filter(settings.mode);  // the region's, now that it is reserved; or every block
  g_mode.store(settings.mode, std::memory_order_seq_cst);
  return true;
}

void stop() noexcept {
  g_mode.store(Mode::off, std::memory_order_seq_cst);
  set_free_filter(Mode::off);
  const Mode was = g_settings.mode;
  g_settings.mode = Mode::off;
  empty_tables(was);
  region_trim();
}

void clear() noexcept { empty_tables(g_settings.mode); }

bool active() noexcept { return mode() != Mode::off; }

namespace {

// on_alloc(), inlined into each of its callers.
[[gnu::always_inline]] LIVEHEAP_OWN_CODE inline void record_alloc(void* p, std::size_t size,
                                                                  const WalkStart& start) noexcept {
  if (p == nullptr) return;
  ThreadState& self = this_thread();
  HookGuard guard(self);
  if (guard.reentered()) return;  // an allocation made by the engine's own callees
  if (self.ignore_depth > 0) return record_own(p, size);
  record_traced(self, p, size, start);
}

}  // namespace

LIVEHEAP_OWN_CODE void on_alloc(void* p, std::size_t size, const WalkStart& start) noexcept {
  record_alloc(p, size, start);
}

LIVEHEAP_OWN_CODE void* malloc_exact(std::size_t size) noexcept {
  void* const p = g_next.malloc(size);
  record_alloc(p, size, here());
  return p;
}

LIVEHEAP_OWN_CODE void* new_exact(std::size_t size, void* (*if_null)(std::size_t)) {
  void* const p = g_next.malloc(size);
  record_alloc(p, size, here());
  if (p == nullptr) [[unlikely]]
    return if_null(size);
  return p;
}

namespace {

// A block in no table the thread asked first: in another thread's young table, or moved
// from there into the live table after the thread asked it. Not found: kNoStack.
[[gnu::noinline]] LiveBlock claim_elsewhere(std::uintptr_t key, const YoungTable* own) noexcept {
  LiveBlock b;
  const bool claimed = any_young_table([&](YoungTable& table) {
    if (&table == own) return false;
    YoungTable::Claim c;
    for (int spins = 0; (c = table.claim(key, &b)) == YoungTable::Claim::moving; ++spins) spin_turn(spins);
    return c == YoungTable::Claim::claimed;
  });
  if (!claimed && !g_live.remove(key, &b)) b = LiveBlock{};
  return b;
}

// A traced block taken out: off its stack's totals.
[[gnu::always_inline]] inline Forgotten forgotten_traced(const LiveBlock& b) noexcept {
  count_block<Side::freed>(b.stack, b.size);
  return {b.size, b.stack, true, false};
}

// forget_block() past the thread's young table: the live table, liveheap's own blocks,
// the other threads' young tables. Out of line: the young table's hit (most frees in a
// thread that has one) saves no registers for this.
[[gnu::noinline]] Forgotten forget_elsewhere(std::uintptr_t key, const YoungTable* young) noexcept {
  LiveBlock b;
  if (g_live.remove(key, &b)) [[likely]]
    return forgotten_traced(b);
  if (g_own.remove(key, &b)) {
    g_own_bytes.fetch_sub(static_cast<std::int64_t>(b.size), std::memory_order_relaxed);
    return {b.size, b.stack, false, true};
  }
  if (young_table_count() != 0)
    if (const LiveBlock claimed = claim_elsewhere(key, young); claimed.stack != kNoStack)
      return forgotten_traced(claimed);
  return {};
}

// Takes the block at `key` off the thread's young table or the other tables and its
// stack's totals, or off liveheap's own blocks: what forget() does, inlined into each of
// its callers.
[[gnu::always_inline]] inline Forgotten forget_block(std::uintptr_t key) noexcept {
  YoungTable* const young = t_thread.young;
  LiveBlock b;
  if (young != nullptr && young->remove_own(key, &b)) [[likely]]
    return forgotten_traced(b);
  return forget_elsewhere(key, young);
}

}  // namespace

void on_free(void* p) noexcept {
  // Processed even when reentered: a stale entry would be charged to whoever reuses the
  // address. A lookup only, no stack walk; what was forgotten is not handed back.
  if (p != nullptr) forget_block(reinterpret_cast<std::uintptr_t>(p));
}

void on_free_then_free(void* p) noexcept {
  forget_block(reinterpret_cast<std::uintptr_t>(p));
  g_next.free(p);
}

Forgotten forget(void* p) noexcept {
  if (p == nullptr) return {};
  return forget_block(reinterpret_cast<std::uintptr_t>(p));
}

void restore(void* p, const Forgotten& f) noexcept {
  LiveBlock replaced;
  if (f.traced && g_live.insert(reinterpret_cast<std::uintptr_t>(p), {f.size, f.stack}, &replaced)) {
    // Not a new allocation: the block was never freed after all.
    const auto bytes = static_cast<std::int64_t>(f.size);
    add_to_stack<Side::freed>(f.stack, -bytes, -kCountUnit);
    add_traced(bytes);
    uncount_replaced(replaced);
  } else if (f.traced) {
    count_dropped(static_cast<std::int64_t>(f.size));  // no room: untraced from now on
  } else if (f.own) {
    record_own(p, f.size);
  }
}

namespace {

// No thread's index: the stream of liveheap's own allocations (pass_sample_point).
constexpr std::uint64_t kOwnAllocationsStream = ~std::uint64_t{0};

// The countdown crossed zero at an allocation of `size` in `session`: the next sample point
// is drawn. False when the crossing does not count (the countdown was of another session).
bool pass_sample_point(std::size_t size, std::uint32_t session) noexcept {
  ThreadState& t = t_thread;
  if (t.sampler_epoch != session && (t.ignore_depth > 0 || t.in_hook)) {
    // liveheap's own allocation (never sampled) before this thread's first draw of the
    // session: a countdown from a stream of its own, and no thread index, which would
    // shift the seeded streams of the program's threads by when liveheap's threads happen
    // to allocate. The thread draws its index at its first crossing outside.
    std::uint64_t own = thread_seed(g_settings.sample_seed, kOwnAllocationsStream);
    t.bytes_until_sample = next_sample_countdown(&own, g_settings.sample_interval);
    return false;
  }
  if (t.sampler_epoch != session) {
    // First crossing in this session: this thread's countdown was drawn for another (or
    // never): draw one now, from its seed, and count this allocation against it.
    t.sampler_epoch = session;
    // Arrival order among the program's threads only: liveheap's own (the recorders, the
    // server; ignored) share one stream, so a repeatable seed stays repeatable whenever
    // they happen to allocate.
    t.rng = thread_seed(
        g_settings.sample_seed,
        t.ignore_depth > 0 ? kOwnThreadsStream : g_sampler_threads.fetch_add(1, std::memory_order_relaxed));
    t.bytes_until_sample =
        next_sample_countdown(&t.rng, g_settings.sample_interval) - static_cast<std::int64_t>(size);
    if (t.bytes_until_sample > 0) return false;
  }
  // The next point is Exp(R) bytes past this block (the process is memoryless).
  t.bytes_until_sample = next_sample_countdown(&t.rng, g_settings.sample_interval);
  return true;
}

}  // namespace

void skip_sample_point(std::size_t size) noexcept {
  pass_sample_point(size, g_session.load(std::memory_order_acquire));
}

namespace {

// Counts the sample at `h`, just placed (a new run, or its run grown): its stack and the
// weight of a draw at `size`, in `session`. Not counted (h->session 0) while a clear runs
// or when the session changed since the draw.
LIVEHEAP_OWN_CODE void count_sample(SampleHeader* h, std::size_t size, std::uint32_t session,
                                    const WalkStart& start) noexcept {
  const double inverse = inverse_probability(size, g_settings.sample_interval);
  const SampleWeight w = sample_weight(size, inverse);
  h->session = 0;
  const auto [stack, folded, record] = capture_and_intern(start);
  if (stack == kNoStack) {  // allocated, never counted
    count_dropped(w.bytes);
    return;
  }
  if (folded) count_folded(w.bytes);
  h->stack = stack;
  h->inverse = inverse;
  SampleCounting counting;
  // A clear runs, or began since this sample was drawn: not counted (h->session stays 0).
  if (g_sample_clearing.load(std::memory_order_seq_cst) ||
      g_session.load(std::memory_order_seq_cst) != session)
    return;
  add_to_totals<Side::alloc>(stack, w.bytes, w.count, record);
  add_live_samples(1);
  h->session = session;
}

// Takes the sample at `h` off the totals, if it was counted in this session.
void uncount_sample(const SampleHeader* h) noexcept {
  if (h->session == 0) return;
  SampleCounting counting;
  // While a clear runs, its zero takes the sample off (it is of the session that ends).
  if (!g_sample_clearing.load(std::memory_order_seq_cst) &&
      h->session == g_session.load(std::memory_order_seq_cst)) {
    const SampleWeight w = sample_weight(h->size, h->inverse);
    add_to_totals<Side::freed>(h->stack, w.bytes, w.count);
    add_live_samples(-1);
  }
}

}  // namespace

SampleHeader* sample_live_header(const void* p) noexcept {
  if (in_sample_region(p)) return region_live_header(p);  // aborts on a double free or a forged pointer
  SampleHeader* h = hosted_header(p);
  if (h == nullptr) report_bad_free("invalid pointer ", p);
  return h;
}

LIVEHEAP_OWN_CODE
void* sample_allocate(std::size_t size, std::size_t alignment, bool zero, const WalkStart& start) noexcept {
  ThreadState& t = t_thread;
  const std::uint32_t session = g_session.load(std::memory_order_acquire);
  if (!pass_sample_point(size, session)) return nullptr;
  if (size == 0 || t.in_hook || t.ignore_depth > 0) return nullptr;
  HookGuard guard;
  const std::size_t usable = next_usable_size(size);
  void* p = hosts(usable, alignment) ? hosted_allocate(size, usable, zero) : nullptr;
  if (p == nullptr) p = region_allocate(size, alignment, zero, usable);
  if (p == nullptr) {
    count_dropped_sample(size);
    return nullptr;
  }
  count_sample(sample_live_header(p), size, session, start);
  return p;
}

void sample_free(void* p, bool keep_run) noexcept {
  SampleHeader* h = sample_live_header(p);
  uncount_sample(h);
  if (!in_sample_region(p)) return hosted_release(p);
  const std::size_t usable = h->usable;
  // Kept for reuse while sampling; after a stop nothing will reuse it soon.
  region_release(p, keep_run && mode() == Mode::sampled);
  // A free, not a block grown out of its run: glibc learns from the first (realloc moves
  // its mapped chunks with mremap, which moves no threshold).
  if (keep_run) show_free_to_next(usable);
}

LIVEHEAP_OWN_CODE void* sample_regrow(void* p, std::size_t size, const WalkStart& start) noexcept {
  ThreadState& t = t_thread;
  const std::uint32_t session = g_session.load(std::memory_order_acquire);
  if (!pass_sample_point(size, session)) return nullptr;
  if (t.in_hook || t.ignore_depth > 0) return nullptr;
  HookGuard guard;
  SampleHeader* h = sample_live_header(p);
  const std::size_t usable = next_usable_size(size);
  uncount_sample(h);  // its old draw; h's fields are read before region_grow changes them
  if (!in_sample_region(p)) {
    void* q = hosted_grow(p, size, usable);
    if (q == nullptr) {  // glibc has no memory: dropped, and the caller's malloc will fail too
      h->session = 0;
      count_dropped_sample(size);
      return nullptr;
    }
    count_sample(hosted_header(q), size, session, start);
    return q;
  }
  // A region block grown to a hosted one's size (a list's array sampled while small) moves
  // to glibc's heap: it copies at most a page, once.
  void* q = hosts(usable, 0) ? hosted_allocate(size, usable, false) : nullptr;
  if (q == nullptr && region_grow(p, size, usable)) {
    count_sample(h, size, session, start);
    return p;
  }
  if (q == nullptr) q = region_allocate(size, 0, false, usable);
  if (q == nullptr) {  // the region is full: dropped, as sample_allocate drops it
    h->session = 0;    // uncounted already: a free of it must not take it off again
    count_dropped_sample(size);
    return nullptr;
  }
  __builtin_memcpy(q, p, h->usable);  // all it may have written (less than the new usable)
  h->session = 0;
  region_release(p, false);  // grown out of its run: back at once (see region_grow)
  count_sample(sample_live_header(q), size, session, start);
  return q;
}

LIVEHEAP_OWN_CODE void* sample_resize(void* p, std::size_t size, const WalkStart& start) noexcept {
  SampleHeader* h = sample_live_header(p);
  const std::uint64_t old_size = h->size, old_usable = h->usable;
  const std::size_t usable = next_usable_size(size);
  void* q = p;
  if (!in_sample_region(p)) {
    q = hosted_resize(p, size, usable);
    h = hosted_header(q);
  } else if (!region_resize(p, size, usable)) {
    // Fewer pages now (or, rarely, more): a run of its size, the bytes copied over.
    q = region_allocate(size, 0, false, usable);
    if (q == nullptr) return nullptr;  // p is left as it was, as a failed realloc leaves it
    __builtin_memcpy(q, p, old_usable < usable ? old_usable : usable);  // all it may have written
    SampleHeader* moved = region_header(q);
    moved->stack = h->stack;
    moved->inverse = h->inverse;
    moved->session = h->session;
    h = moved;
  }
  if (h->session != 0) {
    // The realloc's own stack from now on, as in exact mode (the draw, made whatever the
    // stack, keeps each stack's estimate unbiased too); its first when it cannot be had.
    StackId stack = h->stack;
    if (!t_thread.in_hook && t_thread.ignore_depth == 0) {
      HookGuard guard;
      const auto [now, folded, record] = capture_and_intern(start);
      if (now != kNoStack) stack = now;
      if (folded) count_folded(sample_weight(size, h->inverse).bytes);
    }
    SampleCounting counting;
    // As in sample_free: while a clear runs, its zero takes the sample off.
    if (!g_sample_clearing.load(std::memory_order_seq_cst) &&
        h->session == g_session.load(std::memory_order_seq_cst)) {
      const SampleWeight was = sample_weight(old_size, h->inverse);
      const SampleWeight is = sample_weight(size, h->inverse);
      add_to_totals<Side::freed>(h->stack, was.bytes, was.count);
      add_to_totals<Side::alloc>(stack, is.bytes, is.count);
      h->stack = stack;
    }
  }
  if (q != p && in_sample_region(p)) region_release(p, mode() == Mode::sampled);
  return q;
}

void* sample_unsample(void* p, std::size_t size) noexcept {
  const SampleHeader old = *sample_live_header(p);
  void* q = hosted_unsample(p, size);
  if (q != nullptr) uncount_sample(&old);
  return q;
}

Totals traced() noexcept {
  const std::int64_t current = current_bytes();
  const std::int64_t high = g_high.load(std::memory_order_relaxed);
  std::int64_t peak = g_peak.load(std::memory_order_relaxed);
  if (high > peak) peak = high;  // the single thread's, not raised into g_peak yet
  return {current, peak > current ? peak : current};
}

void reset_peak() noexcept { reset_high(current_bytes()); }

void set_peak_mark(std::int64_t mark) noexcept {
  g_peak_mark.store(mark, std::memory_order_seq_cst);
  // The single thread's next check is at the mark now, if that is below its high: the high
  // goes into the peak first, which it must not lose.
  std::int64_t high = g_high.load(std::memory_order_relaxed);
  while (high > mark) {
    raise_peak(high);
    if (g_high.compare_exchange_weak(high, mark, std::memory_order_seq_cst)) break;
  }
}

std::int64_t peak_mark() noexcept { return g_peak_mark.load(std::memory_order_seq_cst); }

std::int64_t own_memory() noexcept {
  return mapped_bytes() + g_own_bytes.load(std::memory_order_relaxed) + region_overhead_bytes() +
         hosted_overhead_bytes();
}

std::uint64_t stack_count() noexcept { return g_stacks.size(); }

std::uint64_t live_blocks() noexcept {
  if (mode() == Mode::sampled) return static_cast<std::uint64_t>(live_samples());
  std::uint64_t n = g_live.size();
  for_each_young_table([&](const YoungTable& t) { n += t.size(); });
  return n;
}

std::uint64_t dropped() noexcept { return g_dropped.load(std::memory_order_relaxed); }

CapFigures cap_figures() noexcept {
  return {g_max_memory.load(std::memory_order_relaxed), g_cap_reached.load(std::memory_order_relaxed),
          g_folded.load(std::memory_order_relaxed),     g_folded_bytes.load(std::memory_order_relaxed),
          g_dropped.load(std::memory_order_relaxed),    g_dropped_bytes.load(std::memory_order_relaxed)};
}

std::int64_t stack_table_bytes() noexcept { return g_stacks.memory_bytes(); }
std::int64_t live_table_bytes() noexcept {
  std::int64_t young = 0;
  for_each_young_table([&](const YoungTable&) { young += sizeof(YoungTable); });
  return g_live.memory_bytes() + g_own.memory_bytes() + young;
}

namespace {

// Calls fn(record, sums) for every stack with live blocks (or, with include_freed, every
// stack that allocated since start-up).
template <typename Fn>
void for_each_stack(bool include_freed, Fn&& fn) noexcept {
  const std::uint32_t n = g_stacks.size();
  for (StackId id = 1; id <= n; ++id) {
    const StackRecord* r = g_stacks.record(id);
    if (r == nullptr) continue;
    std::int64_t alloc_count = 0, alloc_bytes = 0, freed_count = 0, freed_bytes = 0;
    for_each_copy(r, [&](const StackTotals& t) {
      alloc_count += t.alloc_count.load(std::memory_order_relaxed);
      alloc_bytes += t.alloc_bytes.load(std::memory_order_relaxed);
      freed_count += t.freed_count.load(std::memory_order_relaxed);
      freed_bytes += t.freed_bytes.load(std::memory_order_relaxed);
    });
    const std::int64_t count = alloc_count - freed_count, bytes = alloc_bytes - freed_bytes;
    if (count <= 0 && bytes <= 0 && !(include_freed && alloc_count > 0)) continue;
    fn(r, StackSums{bytes, (count + kCountUnit / 2) / kCountUnit, alloc_bytes,
                    (alloc_count + kCountUnit / 2) / kCountUnit});
  }
}

}  // namespace

static_assert(kMaxStackFrames == kMaxStackDepth);

void visit_stacks(StackVisitor fn, void* ctx, bool include_freed) noexcept {
  std::uintptr_t frames[kMaxStackDepth];
  for_each_stack(include_freed, [&](const StackRecord* r, const StackSums& sums) {
    StackTable::frames(r, frames);
    fn(ctx, frames, r->depth, sums);
  });
}

void visit_stack_ids(StackIdVisitor fn, void* ctx, bool include_freed) noexcept {
  for_each_stack(include_freed, [&](const StackRecord* r, const StackSums& sums) { fn(ctx, r->id, sums); });
}

std::uint32_t stack_frames(std::uint32_t id, std::uintptr_t* out) noexcept {
  const StackRecord* r = id > kMaxStacks ? nullptr : g_stacks.record(id);
  if (r == nullptr) return 0;
  StackTable::frames(r, out);
  return r->depth;
}

void begin_ignore() noexcept { ++t_thread.ignore_depth; }
void end_ignore() noexcept { --t_thread.ignore_depth; }

}  // namespace liveheap::engine
