// The engine: what the hooks call, and what the tracker reads. libc only: no malloc, no
// exceptions, no locks other than its own spin locks.
// Thread-safety: every function may be called from any thread; start/stop/clear must be
// serialized by the caller (the tracker facade holds a mutex around them).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "hosted_samples.hpp"
#include "next_allocator.hpp"
#include "sample_region.hpp"
#include "thread_state.hpp"
#include "walk_start.hpp"

#include "shared.hpp"

namespace liveheap::engine {

// sampled has the sign bit: after the hooks' test for off, the same flags tell it apart.
enum class Mode : std::uint8_t { off = 0, exact = 1, sampled = 0x80 };

// The tracker-memory cap unless start() is given another (README "Configuration" says why).
inline constexpr std::int64_t kDefaultMaxMemory = std::int64_t{1} << 30;

struct Settings {
  Mode mode = Mode::off;
  std::uint32_t max_frames = 32;
  std::uint64_t sample_interval = 524288;
  std::uint64_t sample_seed = 0;  // 0: unpredictable
  // The tracker's own memory (own_memory()) is kept under this: new stacks stop being
  // interned at 3/4 of it (they fold into the over-the-cap stack), the live-block table
  // stops growing at all of it (blocks are dropped). Allocations the tracker makes for
  // itself (reports, the symbolizer) are never refused, but count.
  std::int64_t max_memory = kDefaultMaxMemory;
};

// The one frame of the stack that allocations fold into when their own stack cannot be
// interned (past the cap, or out of stack ids): no return address is 1.
inline constexpr std::uintptr_t kOverCapFrame = 1;

// Read by every hook. One relaxed load; hidden, so it is read PC-relative, not via the GOT.
[[gnu::visibility("hidden")]] extern std::atomic<Mode> g_mode;
inline Mode mode() noexcept { return g_mode.load(std::memory_order_relaxed); }
// mode == Mode::sampled, as a sign test.
inline bool is_sampled(Mode mode) noexcept { return static_cast<std::int8_t>(mode) < 0; }
// Whether a session runs: what the layers above ask (a call, so that they need no access
// to g_mode, which the hooks read in place).
LIVEHEAP_SHARED bool active() noexcept;

// Begins a tracing session with empty tables (call it outside the hooks). Settings must
// already be valid. libunwind is not loaded here (load_unwinder, stack_capture.hpp): until
// it is, a stack with a frame the rules cannot step goes to libgcc's unwinder. False when sampled mode cannot
// reserve its address range (tracing stays off).
LIVEHEAP_SHARED bool start(const Settings& settings) noexcept;
// Ends the session and empties the tables.
LIVEHEAP_SHARED void stop() noexcept;
// Empties the tables and resets the peak; tracing goes on.
LIVEHEAP_SHARED void clear() noexcept;

// Exact mode, called only while mode() is exact. `p` may be null (then ignored).
// `start`: the hook's here(), where the stack walk begins (none: at the walk's own frame,
// walking up through the engine's frames first).
void on_alloc(void* p, std::size_t size, const WalkStart& start = {}) noexcept;
// malloc in exact mode, whole: the block from the allocator underneath, recorded. The malloc
// hook jumps here, so that the walk from here() steps to the hook's caller; one frame, one
// prologue, where the hook's call of on_alloc() set up two.
void* malloc_exact(std::size_t size) noexcept;
// The same for operator new: `if_null` is what a null block becomes (the C++ runtime's
// answer, which may throw), called last. A function of its own: its walks start at another
// code address than malloc's, which tells the kept walks of the two apart at once.
void* new_exact(std::size_t size, void* (*if_null)(std::size_t));
void on_free(void* p) noexcept;
// on_free() of a block that is not null, then the allocator underneath frees it: the free
// hook's exact path ends with a jump here, and this ends with a jump to the allocator.
void on_free_then_free(void* p) noexcept;
// realloc: forget `p` before glibc may hand its address to another thread; if the
// realloc fails, put it back. The token carries what was forgotten.
struct Forgotten {
  std::uint64_t size = 0;
  std::uint32_t stack = 0;
  bool traced = false;
  bool own = false;
};
Forgotten forget(void* p) noexcept;
void restore(void* p, const Forgotten& forgotten) noexcept;

// Sampled mode. The fast path: count the bytes down; true when this allocation crossed
// the next sample point.
inline bool sample_point_crossed(std::size_t size) noexcept {
  // One subtraction on the thread's word, whose flags answer (a signed "still above zero"):
  // compiled from C++, a load, a subtraction, a store and a test.
  bool above_zero;
  asm("subq %2, %0" : "+m"(t_thread.bytes_until_sample), "=@ccg"(above_zero) : "r"(size) : "cc");
  return !above_zero;
}
// The slow path: a sampled block (hosted by glibc, hosted_samples.hpp, or from the sample
// region), or nullptr when this allocation is not to be sampled after all (the caller
// allocates from the allocator underneath). `zero`: the block must
// read as zero (calloc); malloc & co. pass false and may get a reused run as it was left.
// `start` as for on_alloc().
void* sample_allocate(std::size_t size, std::size_t alignment, bool zero,
                      const WalkStart& start = {}) noexcept;
// A crossing that is not sampled whatever happens (a realloc that keeps an unsampled
// block's draw): the next sample point is drawn, as sample_allocate() draws it.
void skip_sample_point(std::size_t size) noexcept;
// realloc of a block of the sample region past its usable size, when the new size's draw
// samples it (the caller saw sample_point_crossed(size)): a new sample at `size` and the
// realloc's stack, the old one taken off. Its run grows where it is when it can (the
// region's last run, or followed by a free one), as glibc's realloc extends a block: no
// copy, and no second run resident; else a new run, the bytes copied over, the old run
// given back. nullptr when the draw is not taken after all (a nested or ignored
// allocation, another session's countdown) or the region is full: the caller allocates
// from the allocator underneath, copies and frees p.
void* sample_regrow(void* p, std::size_t size, const WalkStart& start = {}) noexcept;
// realloc of a hosted sampled block (hosted_samples.hpp) past its usable size when the
// draw does not sample it: an ordinary block of glibc's of `size` bytes, the content kept,
// the sample taken off (grown through glibc's realloc: no second copy resident). nullptr
// when glibc has no memory (p is unchanged).
void* sample_unsample(void* p, std::size_t size) noexcept;
// The header of a live sampled block, hosted or in the region; a pointer that is neither
// (or a block freed already) aborts with a message, as glibc's free does.
SampleHeader* sample_live_header(const void* p) noexcept;
// Frees a sampled block (hosted, or of the sample region), whatever the mode (samples outlive sessions); a
// double free or a pointer that is no sampled block aborts with a message, as glibc does.
// `keep_run`: its pages may stay resident for reuse (region_release); a block that moved
// out of its run by growing passes false.
void sample_free(void* p, bool keep_run = true) noexcept;
// realloc of a block of the sample region to `size`, no more than its usable size: it stays
// sampled with the weight of its draw (sampler.hpp says why that is unbiased), its bytes now
// `size`, counted at the realloc's stack. Hosted, in its chunk (shrunk by glibc when a page
// or more larger than it needs); in the region, in place when its run fits, else moved
// within the region. nullptr when the region has no room (p is unchanged). Checked as sample_free.
void* sample_resize(void* p, std::size_t size, const WalkStart& start = {}) noexcept;

struct Totals {
  std::int64_t current = 0;
  std::int64_t peak = 0;
};
LIVEHEAP_SHARED Totals traced() noexcept;
LIVEHEAP_SHARED void reset_peak() noexcept;

// The peak recorder's mark (src/tracker/peak.cpp): the allocation that finds the traced
// bytes past it signals the recorder (peak_signal.hpp), which sleeps until then. It is
// found by the checks that keep the peak: the single traced thread's compare at every
// allocation, or each kPeakCheckBytes of a thread's growth with several (so up to 64 KiB a
// thread late). kNoPeakMark (the start): never.
inline constexpr std::int64_t kNoPeakMark = INT64_MAX;
LIVEHEAP_SHARED void set_peak_mark(std::int64_t mark) noexcept;
LIVEHEAP_SHARED std::int64_t peak_mark() noexcept;

// Bytes the tracker holds: table pages, sample headers, allocations under ignore scopes.
LIVEHEAP_SHARED std::int64_t own_memory() noexcept;
LIVEHEAP_SHARED std::uint64_t stack_count() noexcept;
// Traced blocks alive now (in sampled mode: samples alive now).
LIVEHEAP_SHARED std::uint64_t live_blocks() noexcept;
LIVEHEAP_SHARED std::uint64_t dropped() noexcept;

// What the tracker-memory cap did since the process started. Folded: traced at the
// over-the-cap stack instead of their own (their bytes still count); dropped: not traced
// at all (the live table could not grow, or sampled mode's region was full). In sampled
// mode, samples and their weighted bytes.
struct CapFigures {
  std::int64_t max_memory = 0;
  bool reached = false;  // a stack was refused or a block dropped for the cap
  std::uint64_t folded_blocks = 0;
  std::int64_t folded_bytes = 0;
  std::uint64_t dropped_blocks = 0;
  std::int64_t dropped_bytes = 0;
};
LIVEHEAP_SHARED CapFigures cap_figures() noexcept;
// Bytes mapped now for the stack table and the live-block table (both in own_memory()).
LIVEHEAP_SHARED std::int64_t stack_table_bytes() noexcept;
LIVEHEAP_SHARED std::int64_t live_table_bytes() noexcept;
// Stack walks that needed libunwind: a frame without a simple CFI rule (signal frames,
// PLT stubs, code without unwind tables), each ~0.2 us instead of ~0.1 us.
LIVEHEAP_SHARED std::uint64_t fallback_walks() noexcept;

// What one stack holds now and has allocated since the process started (weighted
// estimates in sampled mode). The cumulative figures survive clear(), stop() and start().
struct StackSums {
  std::int64_t bytes = 0;        // live
  std::int64_t count = 0;        // live blocks
  std::int64_t alloc_bytes = 0;  // allocated since start-up
  std::int64_t alloc_count = 0;  // blocks allocated since start-up
};
// Calls fn for every stack that has live blocks now (with `include_freed`, also for every
// stack that allocated since start-up). O(stacks); takes no lock, so the callback may
// allocate (call it under an ignore scope). `frames` is good for the call only: a record
// keeps its frames coded (frame_code.hpp).
using StackVisitor = void (*)(void* ctx, const std::uintptr_t* frames, std::uint32_t depth,
                              const StackSums& sums);
LIVEHEAP_SHARED void visit_stacks(StackVisitor fn, void* ctx, bool include_freed = false) noexcept;
// The same with each stack's id (stable for the life of the process), and the frames of one
// id: what the history and StackSnapshots record and symbolize when asked.
using StackIdVisitor = void (*)(void* ctx, std::uint32_t id, const StackSums& sums);
LIVEHEAP_SHARED void visit_stack_ids(StackIdVisitor fn, void* ctx, bool include_freed = false) noexcept;
// The most frames a stack has (a capture's, a route's, Python's merged in).
inline constexpr std::uint32_t kMaxStackFrames = 256;
// The frames of stack `id` into `out` (room for kMaxStackFrames); returns how many, 0 for
// an id not interned.
LIVEHEAP_SHARED std::uint32_t stack_frames(std::uint32_t id, std::uintptr_t* out) noexcept;

// Ignore scopes: allocations on this thread are not traced and count as the tracker's own.
LIVEHEAP_SHARED void begin_ignore() noexcept;
LIVEHEAP_SHARED void end_ignore() noexcept;

}  // namespace liveheap::engine
