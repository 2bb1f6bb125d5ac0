// The stack walk with cached frame rules against libunwind and libgcc: the same frames,
// to the address, for every shape of stack; and the rule cache against a model.
#include <dlfcn.h>
#include <signal.h>
#include <sys/time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "engine.hpp"
#include "frame_rule_cache.hpp"
#include "frame_rules.hpp"
#include "repeated_walks.hpp"
#include "stack_capture.hpp"
#include "stack_table.hpp"
#include "unwind_shapes.hpp"

namespace liveheap::engine::test {
namespace {

class Unwind : public testing::Test {
 protected:
  void SetUp() override { load_unwinder(); }  // libunwind, and our own code's range
};

// The rule walk must have walked (not handed over) and agree with both other unwinders.
void expect_same_stacks(const Captured& c, const char* what) {
  SCOPED_TRACE(what);
  ASSERT_TRUE(c.frame_rules_walked);
  ASSERT_FALSE(c.libunwind.empty()) << "libunwind did not walk";
  ASSERT_GE(c.frame_rules.size(), 3u);
  EXPECT_EQ(c.frame_rules, c.libunwind);
  EXPECT_EQ(c.frame_rules, c.libgcc);
  if (!c.from_here_taken) return;
  // Begun at capture_all's registers, the walk's first frame is capture_all's caller's call
  // site, and the rest are the same (one more at the end when max_frames cut them).
  ASSERT_GE(c.from_here.size(), c.frame_rules.size() - 1);
  EXPECT_TRUE(std::equal(c.frame_rules.begin() + 1, c.frame_rules.end(), c.from_here.begin()))
      << "the walk from capture_all's registers is not capture_all's callers";
  EXPECT_EQ(c.from_here_hash,
            hash_frames(c.from_here.data(), static_cast<std::uint32_t>(c.from_here.size())));
}

TEST_F(Unwind, EveryFrameShapeAloneMatchesLibunwindAndLibgcc) {
  for (int s = 0; s < static_cast<int>(Shape::kCount); ++s) {
    const auto shape = static_cast<Shape>(s);
    expect_same_stacks(capture_through_from_here({shape, shape, shape}),
                       ("shape " + std::to_string(s)).c_str());
  }
}

TEST_F(Unwind, RandomMixturesOfShapesMatch) {
  std::mt19937 rng(2026);
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<Shape> shapes(1 + rng() % 40);
    for (Shape& s : shapes) s = static_cast<Shape>(rng() % static_cast<unsigned>(Shape::kCount));
    expect_same_stacks(capture_through_from_here(shapes), ("trial " + std::to_string(trial)).c_str());
  }
}

TEST_F(Unwind, RepeatedStacksStillMatchOnceRulesAreCached) {
  // The second and later walks read per-thread and shared caches, not the CFI.
  const std::vector<Shape> a{Shape::plain, Shape::alloca_frame, Shape::unoptimized, Shape::plain};
  const std::vector<Shape> b{Shape::realigned, Shape::qsort_callback, Shape::plain};
  for (int i = 0; i < 50; ++i) {
    expect_same_stacks((i % 5 != 0 ? capture_through_from_here : capture_through)(i % 2 ? a : b, 128),
                       "alternating");
    expect_same_stacks((i % 4 != 0 ? capture_through_from_here : capture_through)(i % 3 ? b : a, 128),
                       "alternating, shifted");
  }
}

TEST_F(Unwind, MaxFramesKeepsTheInnermostFrames) {
  const std::vector<Shape> deep(60, Shape::plain);
  const Captured full = capture_through(deep, 128);
  expect_same_stacks(full, "full");
  const Captured full_from_here = capture_through_from_here(deep, 128);
  expect_same_stacks(full_from_here, "full, from here too");
  for (std::uint32_t max : {1u, 5u, 32u}) {
    const Captured cut = capture_through_from_here(deep, max);
    ASSERT_EQ(cut.frame_rules.size(), max);
    // From capture_all's registers: the same cut one frame further out.
    ASSERT_EQ(cut.from_here.size(), max);
    EXPECT_TRUE(std::equal(cut.from_here.begin(), cut.from_here.end(), full_from_here.from_here.begin()));
    // Same call chain, so the same return addresses up to the cut.
    EXPECT_TRUE(
        std::equal(cut.frame_rules.begin(), cut.frame_rules.end(), full_from_here.frame_rules.begin()));
    EXPECT_EQ(cut.frame_rules, cut.libunwind);
  }
}

TEST_F(Unwind, ThreadStacksEndWhereLibunwindsEnd) {
  std::vector<Captured> results(4);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < results.size(); ++t)
    threads.emplace_back([&results, t] {
      for (int i = 0; i < 20; ++i)
        results[t] = capture_through({Shape::plain, Shape::std_function, Shape::alloca_frame});
    });
  for (std::thread& t : threads) t.join();
  for (const Captured& c : results) expect_same_stacks(c, "thread");
}

// A signal frame has no rule of the simple form: the walk hands over to libunwind, and
// capture_stack's answer is libunwind's.
Captured g_in_handler;
std::uintptr_t g_capture_stack_frames[kMaxFramesCapture];
std::uint32_t g_capture_stack_depth;
void capture_in_handler(int) {
  g_in_handler = capture_all();
  std::uint64_t hash = 0;
  g_capture_stack_depth = capture_stack(g_capture_stack_frames, 128, &hash);
}

TEST_F(Unwind, SignalFramesGoToLibunwind) {
  const std::uint64_t fallbacks_before = fallback_walks();
  struct sigaction action {
  }, old{};
  action.sa_handler = capture_in_handler;
  sigemptyset(&action.sa_mask);
  ASSERT_EQ(sigaction(SIGUSR1, &action, &old), 0);
  raise(SIGUSR1);
  sigaction(SIGUSR1, &old, nullptr);
  EXPECT_FALSE(g_in_handler.frame_rules_walked);
  EXPECT_EQ(fallback_walks(), fallbacks_before + 1);  // counted, for /stats
  ASSERT_GE(g_in_handler.libunwind.size(), 3u);
  // The handler called capture_all (one frame more) and capture_stack from other lines:
  // below their innermost frames the stacks are the same, to the handler's caller.
  ASSERT_EQ(g_capture_stack_depth + 1, g_in_handler.libunwind.size());
  EXPECT_TRUE(std::equal(g_in_handler.libunwind.begin() + 2, g_in_handler.libunwind.end(),
                         g_capture_stack_frames + 1));
}

// Code unloaded and other code loaded (perhaps at the same addresses): no stale rule.
void capture_from_module(void* out) { *static_cast<Captured*>(out) = capture_all(); }

Captured call_module(const char* path, void** handle) {
  *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  Captured c;
  if (*handle == nullptr) {
    ADD_FAILURE() << dlerror();
    return c;
  }
  using ModuleCall = void (*)(void (*)(void*), void*, int);
  auto call = reinterpret_cast<ModuleCall>(dlsym(*handle, "module_call"));
  if (call == nullptr) {
    ADD_FAILURE() << "no module_call in " << path;
    return c;
  }
  call(capture_from_module, &c, 6);
  return c;
}

TEST_F(Unwind, DlcloseForgetsRulesAndOtherCodeAtTheSameAddressesUnwinds) {
  for (int round = 0; round < 3; ++round) {
    for (const char* path : {LIVEHEAP_UNWIND_MODULE_A, LIVEHEAP_UNWIND_MODULE_B}) {
      void* handle = nullptr;
      expect_same_stacks(call_module(path, &handle), path);
      EXPECT_GT(cached_frame_rules(), 0u);
      ASSERT_EQ(dlclose(handle), 0);
      EXPECT_EQ(cached_frame_rules(), 0u) << "dlclose must drop every cached rule";
    }
  }
}

// The walk reuses the previous walk's outer steps after checking them (walk_cache.hpp).
// Each test below makes a stack where reusing them unchecked would give a wrong stack.
volatile std::uintptr_t g_sink;
volatile int g_depth_a = 4, g_depth_b = 4;

std::uint64_t reused_frames() { return walk_cache_use().reused_frames; }
// The next walk starts from an empty cache, and is kept whole (a walk that shares few
// frames with the cached one is otherwise kept only now and then, and a thread whose walks
// share few walks with the rules alone for a while).
void empty_walk_cache() { forget_frame_rules(); }

[[gnu::noinline]] Captured inner_chain(int level) {
  if (level <= 0) return capture_all();
  Captured c = inner_chain(level - 1);
  g_sink = g_sink + static_cast<std::uintptr_t>(level);
  return c;
}
// Two callers with the same frame (they differ in a constant only), called from one
// function at the same rsp: the chain below them is at the same addresses in both.
[[gnu::noinline]] Captured outer_a() {
  Captured c = inner_chain(g_depth_a);
  g_sink = g_sink + 1;
  return c;
}
[[gnu::noinline]] Captured outer_b() {
  Captured c = inner_chain(g_depth_a);
  g_sink = g_sink + 2;
  return c;
}
// One function, two call sites of the chain: the same CFA, another return address in it.
[[gnu::noinline]] Captured two_call_sites(bool second) {
  Captured c;
  if (second) {
    c = inner_chain(g_depth_b);
    g_sink = g_sink + 7;
  } else {
    c = inner_chain(g_depth_a);
    g_sink = g_sink + 9;
  }
  return c;
}
[[gnu::noinline]] Captured through(Captured (*fn)()) {
  Captured c = fn();
  g_sink = g_sink + 3;
  return c;
}

// The frames two stacks of one depth do not share: exactly one, at `*at`.
std::size_t frames_apart(const Captured& x, const Captured& y, std::size_t* at) {
  std::size_t apart = 0;
  for (std::size_t i = 0; i < x.frame_rules.size() && i < y.frame_rules.size(); ++i)
    if (x.frame_rules[i] != y.frame_rules[i]) {
      if (apart++ == 0) *at = i;
    }
  return apart;
}

// The same stack twice, to the saved registers: everything that differs between the two
// calls is in memory, not in a register a callee saves on the stack (the walk checks a
// saved rbp where a rule reads it, and the compiler may keep a loop's index or an address
// of c[i] in rbp).
thread_local Captured t_repeated[2];
thread_local std::uint64_t t_repeated_reused[2];
thread_local std::uint64_t t_repeated_before;
thread_local int t_repeated_count;
[[gnu::noinline]] void capture_repeated(const std::vector<Shape>* shapes) {
  t_repeated_before = reused_frames();
  Captured captured = capture_through(*shapes);
  t_repeated_reused[t_repeated_count] = reused_frames() - t_repeated_before;
  t_repeated[t_repeated_count++] = std::move(captured);
}

TEST_F(Unwind, ARepeatedStackIsTakenFromThePreviousWalkAndStillMatches) {
  const std::vector<Shape> shapes{Shape::plain, Shape::alloca_frame, Shape::unoptimized, Shape::plain};
  empty_walk_cache();
  t_repeated_count = 0;
  while (t_repeated_count < 2) capture_repeated(&shapes);  // one call site, no index register
  const Captured* c = t_repeated;
  const std::uint64_t* reused = t_repeated_reused;
  expect_same_stacks(c[0], "first");
  expect_same_stacks(c[1], "again");
  EXPECT_EQ(c[0].frame_rules, c[1].frame_rules);
  EXPECT_EQ(reused[1], c[1].frame_rules.size()) << "every frame from the cache";
}

TEST_F(Unwind, AnotherOuterCallerAtTheSameDepthIsNotTakenFromTheCache) {
  Captured c[2];
  std::uint64_t reused = 0;
  Captured (*const callers[2])() = {outer_a, outer_b};
  empty_walk_cache();
  for (int i = 0; i < 2; ++i) {  // one call site
    const std::uint64_t before = reused_frames();
    c[i] = through(callers[i]);
    reused = reused_frames() - before;
  }
  expect_same_stacks(c[0], "outer_a");
  expect_same_stacks(c[1], "outer_b");
  ASSERT_EQ(c[0].frame_rules.size(), c[1].frame_rules.size());
  // All but two frames from the cache: the one whose return address differs, and the next
  // one out, which the rules walk from outer_b's code (the cache has outer_a's).
  EXPECT_EQ(reused, c[1].frame_rules.size() - 2);
  // Only the chain's return address, into outer_a or outer_b (both return into `through`
  // from one call site): after capture_all's two frames and the chain's g_depth_a.
  std::size_t at = 0;
  EXPECT_EQ(frames_apart(c[0], c[1], &at), 1u);
  EXPECT_EQ(static_cast<int>(at), g_depth_a + 2);
}

TEST_F(Unwind, AReturnAddressRewrittenByAnotherCallSiteIsNotTakenFromTheCache) {
  for (int round = 0; round < 4; ++round) {
    Captured c[2];
    std::uint64_t reused = 0;
    empty_walk_cache();
    for (int i = 0; i < 2; ++i) {  // one call site
      const std::uint64_t before = reused_frames();
      c[i] = two_call_sites(i == 1);
      reused = reused_frames() - before;
    }
    expect_same_stacks(c[0], "first call site");
    expect_same_stacks(c[1], "second call site");
    ASSERT_EQ(c[0].frame_rules.size(), c[1].frame_rules.size());
    EXPECT_EQ(reused, c[1].frame_rules.size() - 2);  // as above: that frame and the next
    std::size_t at = 0;
    EXPECT_EQ(frames_apart(c[0], c[1], &at), 1u) << "the compiler merged the two calls";
    EXPECT_EQ(static_cast<int>(at), g_depth_a + 2);  // the chain's return into two_call_sites
  }
}

// A frame whose CFA its rbp gives (alloca), entered at another depth while the frames it
// calls sit at the same addresses: the same rsp and return addresses below it, another rbp
// saved by its callee, and so another CFA. The walk may take the inner steps from the cache
// but must check that saved rbp before it takes this frame's: its old return-address slot
// now lies inside the frame's own alloca buffer, which is filled with the old return
// address, so a walk that skipped the check would read the old caller there.
thread_local std::uintptr_t t_old_return;  // the first call site's return address, once known
[[gnu::noinline]] Captured saves_rbp_and_captures() {
  asm volatile("" ::: "rbp", "memory");  // this frame saves the caller's rbp, the rule reads it
  Captured c = capture_all();
  asm volatile("" ::: "memory");
  return c;
}
[[gnu::noinline]] Captured rbp_frame(std::size_t n) {
  auto* buffer = static_cast<volatile std::uintptr_t*>(alloca(n));
  for (std::size_t i = 0; i < n / sizeof(std::uintptr_t); ++i) buffer[i] = t_old_return;
  Captured c = saves_rbp_and_captures();
  g_sink = g_sink + buffer[0];
  return c;
}
// Two call sites of rbp_frame, 192 bytes apart in depth, whose allocas make up the
// difference: rbp_frame calls saves_rbp_and_captures at one rsp from both.
[[gnu::noinline]] Captured shifted_rbp_frame(bool second) {
  if (second) {
    auto* pad = static_cast<volatile char*>(alloca(64));
    pad[0] = 1;
    Captured c = rbp_frame(256);
    asm volatile("nop" ::: "memory");
    return c;
  }
  auto* pad = static_cast<volatile char*>(alloca(256));
  pad[0] = 2;
  Captured c = rbp_frame(64);
  asm volatile("nop\n nop" ::: "memory");
  return c;
}

TEST_F(Unwind, ASavedRbpThatALaterFrameReadsIsCheckedBeforeItsStepIsTaken) {
  Captured c[2];
  std::uint64_t reused = 0;
  empty_walk_cache();
  t_old_return = 0;
  for (int i = 0; i < 2; ++i) {  // one call site
    const std::uint64_t before = reused_frames();
    c[i] = shifted_rbp_frame(i == 1);
    reused = reused_frames() - before;
    // rbp_frame's return address: the frame after capture_all's, saves_rbp_and_captures's
    // and rbp_frame's own call sites.
    if (i == 0 && c[0].frame_rules.size() > 3) t_old_return = c[0].frame_rules[3];
  }
  expect_same_stacks(c[0], "first call site");
  expect_same_stacks(c[1], "second call site, another depth");
  ASSERT_EQ(c[0].frame_rules.size(), c[1].frame_rules.size());
  std::size_t at = 0;
  EXPECT_EQ(frames_apart(c[0], c[1], &at), 1u) << "the compiler merged the two call sites";
  EXPECT_EQ(at, 3u);
  // The inner frames did come from the cache (the same rsp below rbp_frame's): the walk met
  // the changed saved rbp inside a run, not before one.
  EXPECT_GE(reused, 2u);
}

TEST_F(Unwind, DepthsAroundTheFrameLimitMatch) {
  // Stacks deeper and shallower than the limit, one after the other: the cached walk was
  // cut at the limit, or the new one is cut inside the cached part.
  std::mt19937 rng(11);
  empty_walk_cache();
  const std::uint64_t before = reused_frames();
  for (int trial = 0; trial < 200; ++trial) {
    const std::vector<Shape> shapes(1 + rng() % 45, rng() % 4 ? Shape::plain : Shape::alloca_frame);
    const std::uint32_t max = trial % 3 == 0 ? 128 : 8 + rng() % 40;
    expect_same_stacks(capture_through(shapes, max), ("trial " + std::to_string(trial)).c_str());
  }
  // Recursions of one frame shape, the same frames at the same addresses: the walks did
  // take frames from the cache (867 in all when written), not the rules alone throughout.
  EXPECT_GT(reused_frames() - before, 200u);
}

// capture_stack's hash, taken from the cached walk's hash states where it reuses one, is
// always hash_frames() of the frames it returns.
[[gnu::noinline]] void check_hash(int level, std::uint32_t max, int* checked) {
  if (level > 0) {
    if ((level + *checked) % 3 == 0) check_hash(level - 1, max, checked);
    else check_hash(level - 2 < 0 ? 0 : level - 2, max, checked);
    g_sink = g_sink + static_cast<std::uintptr_t>(level);
    return;
  }
  std::uintptr_t frames[kMaxFramesCapture + kOwnFramesSlack];
  std::uint64_t hash = 0;
  const std::uint32_t depth = capture_stack(frames, max, &hash);
  EXPECT_EQ(hash, hash_frames(frames, depth));
  ++*checked;
}

TEST_F(Unwind, TheHashOfAReusedWalkIsTheHashOfItsFrames) {
  const std::uint64_t before = reused_frames();
  int checked = 0;
  for (int round = 0; round < 300; ++round)
    check_hash(round % 37, round % 5 == 0 ? 8 + round % 30 : 128, &checked);
  EXPECT_EQ(checked, 300);
  EXPECT_GT(reused_frames(), before);
}

// A stack id the walk cache knows (KnownStack) is always the one the stack table gives the
// frames of that stack: checked on random recursions that share and change their outer
// parts, at frame limits that cut them. A walk whose id is known writes no frames past the
// few the memo compared, so each stack is walked twice from one call site, with the memo
// and then without it, and the second walk's frames are looked up.
StackTable g_memo_table;
volatile int g_two = 2;

// From capture_at's own registers (`from_here`, as a hook walks) or from the walk's. Begun
// from there, as a hook's capture does: a walk this thread repeats is known before it is
// walked (repeated_stack; then *repeated is set and nothing is written), and a walk the
// memo did not know is kept, with the id the table gives its frames.
[[gnu::noinline]] std::uint32_t capture_at(std::uintptr_t* frames, std::uint32_t max, std::uint64_t* hash,
                                           KnownStack* known, bool from_here, bool* repeated) {
  const WalkStart start = from_here ? here() : WalkStart{};
  if (from_here && known != nullptr) {
    known->id = repeated_stack(max, start).id;
    *repeated = known->id != kNoStack;
    if (*repeated) return 0;
  }
  const std::uint32_t depth = capture_stack(frames, max, hash, known, start);
  if (from_here && known != nullptr && known->id == kNoStack)
    keep_repeated_walk(frames, depth, max, start, g_memo_table.find_or_insert(frames, depth, false));
  g_sink = g_sink + depth;  // work after the call: not a tail call
  return depth;
}

struct KnownIds {
  std::uint64_t known = 0;     // walks whose id was known
  std::uint64_t repeated = 0;  // of them, known before the walk (repeated_stack)
};

[[gnu::noinline]] void check_known_id(int level, std::uint32_t max, int branch, bool from_here, int* checked,
                                      KnownIds* known_ids) {
  if (level > 0) {
    // The outer levels call from one site; the innermost three take turns among three (the
    // third skipping a level), so that stacks share their outer part, as a server's do.
    const int site = level <= 3 ? branch % 3 : 0;
    const int rest = level <= 3 ? branch / 3 : branch;
    if (site == 0) check_known_id(level - 1, max, rest, from_here, checked, known_ids);
    else if (site == 1) check_known_id(level - 1, max, rest, from_here, checked, known_ids);
    else check_known_id(level - 2 < 0 ? 0 : level - 2, max, rest, from_here, checked, known_ids);
    g_sink = g_sink + static_cast<std::uintptr_t>(level);
    return;
  }
  std::uintptr_t frames[2][kMaxFramesCapture + kOwnFramesSlack];
  std::uint64_t hash[2] = {};
  std::uint32_t depth[2] = {};
  KnownStack known;
  bool repeated = false;
  // One call site, so the same stack twice. At -O3 GCC peels both passes of a loop over
  // two-element arrays into two call sites, and splits one on a `pass == 0 ?` argument: the
  // pass number is hidden from it (an empty asm may have changed it) and the memo argument
  // is data. (Release builds failed this test for that reason alone.)
  KnownStack* const memo_of_pass[2] = {&known, nullptr};
  for (int pass = 0; pass < g_two; ++pass) {
    int p = pass;
    asm volatile("" : "+r"(p));
    depth[p] = capture_at(frames[p], max, &hash[p], memo_of_pass[p], from_here, &repeated);
  }
  if (!repeated) {
    ASSERT_EQ(depth[0], depth[1]);
  }
  EXPECT_EQ(hash[1], hash_frames(frames[1], depth[1]));
  const StackId id = g_memo_table.find_or_insert(frames[1], depth[1], false);
  ASSERT_NE(id, kNoStack);
  if (known.id != kNoStack) {
    EXPECT_EQ(known.id, id) << (repeated ? "repeated_stack" : "the memo") << " named another stack";
    ++known_ids->known;
    if (repeated) ++known_ids->repeated;
  } else {
    EXPECT_TRUE(std::equal(frames[0], frames[0] + depth[0], frames[1]));
    EXPECT_EQ(hash[0], hash[1]);
    remember_stack_id(frames[0], known, id);
  }
  ++*checked;
}

TEST_F(Unwind, AStackIdTheWalkKnowsIsTheTablesIdForItsFrames) {
  for (const bool from_here : {false, true}) {
    SCOPED_TRACE(from_here ? "from the caller's registers, as a hook walks" : "from the walk's own frame");
    int checked = 0;
    KnownIds known_ids;
    std::uint64_t memo_hits = 0;
    std::thread([&] {  // a thread of its own: its memo holds this test's ids only
      std::mt19937 random(7);
      for (int round = 0; round < 20000 && !testing::Test::HasFailure(); ++round) {
        // Mostly one depth with the call sites below it taking turns, as a server's handlers
        // do; now and then another depth, or a frame limit that cuts the stack (the walk
        // ending with the cache, or after it, or before its end).
        const std::uint32_t max = round % 11 == 0   ? 4 + random() % 12
                                  : round % 17 == 0 ? 14 + random() % 6
                                                    : 128;
        const int level = round % 13 == 0 ? 2 + static_cast<int>(random() % 14) : 10;
        check_known_id(level, max, static_cast<int>(random() % 27), from_here, &checked, &known_ids);
      }
      memo_hits = walk_cache_use().memo_hits;
    })
        .join();
    EXPECT_EQ(checked, 20000);
    EXPECT_GT(known_ids.known, 20u) << "the memo hardly ever knew a stack";
    EXPECT_EQ(known_ids.known, memo_hits);
    if (from_here) {
      EXPECT_GT(known_ids.repeated, 20u) << "no walk was known before it was walked";
    }
  }
}

// Eight stacks in turn outnumber the four kept walks, each put out before it comes back:
// the spares keep them, so each is known before it is walked, with its own id. The second
// thread takes over the walk state of one that exited (the first's, or an earlier test's):
// emptied, it keeps and knows walks the same.
TEST_F(Unwind, StacksThatOutnumberTheKeptWalksAreKnownFromTheSpares) {
  constexpr int kRounds = 800;
  for (int thread = 0; thread < 2; ++thread) {
    SCOPED_TRACE(thread == 0 ? "first thread" : "a thread that took over a state");
    int checked = 0;
    KnownIds known_ids;
    std::thread([&] {  // a thread of its own: no walks kept before
      for (int round = 0; round < kRounds && !testing::Test::HasFailure(); ++round)
        check_known_id(10, 128, round % 8, true, &checked, &known_ids);
    })
        .join();
    EXPECT_EQ(checked, kRounds);
    EXPECT_GT(known_ids.repeated, kRounds * 3 / 4u)
        << "the stacks were walked in full again (" << known_ids.known << " known)";
  }
}

// As a hook walks: one walk a call, asked of the kept walks first, kept after a walk in
// full (check_known_id's recursion, without its second walk).
[[gnu::noinline]] void walk_as_a_hook(int level, int branch, KnownIds* known_ids) {
  if (level > 0) {
    const int site = level <= 3 ? branch % 3 : 0;
    const int rest = level <= 3 ? branch / 3 : branch;
    if (site == 0) walk_as_a_hook(level - 1, rest, known_ids);
    else if (site == 1) walk_as_a_hook(level - 1, rest, known_ids);
    else walk_as_a_hook(level - 2 < 0 ? 0 : level - 2, rest, known_ids);
    g_sink = g_sink + static_cast<std::uintptr_t>(level);
    return;
  }
  std::uintptr_t frames[kMaxFramesCapture + kOwnFramesSlack];
  std::uint64_t hash = 0;
  KnownStack known;
  bool repeated = false;
  capture_at(frames, 128, &hash, &known, true, &repeated);
  if (repeated) ++known_ids->repeated;
}

// Stacks taking turns, up to as many as the kept walks and spares hold, walked as hooks
// walk them, are each walked in full a few times and known from then on: 8, 9, 12 and 27
// in turn walk 14, 16, 22 and 59 times in full in 800 walks (the walk cache holds a walk
// whole to keep it, and one that took an inner and an outer run from the cache with steps
// of its own between is not recorded at first; it is kept at a later walk). The test that
// walks each stack twice (check_known_id) sees fewer kept: its second walk rewrites the
// cache between a stack's walk and the next.
TEST_F(Unwind, StacksTakingTurnsAreEachWalkedInFullOnlyAFewTimes) {
  constexpr int kRounds = 800;
  for (const int in_turn : {8, 9, 12, 27}) {
    SCOPED_TRACE(std::to_string(in_turn) + " stacks in turn");
    KnownIds known_ids;
    std::thread([&] {  // a thread of its own: no walks kept before
      for (int round = 0; round < kRounds; ++round) walk_as_a_hook(10, round % in_turn, &known_ids);
    })
        .join();
    EXPECT_GE(known_ids.repeated, static_cast<std::uint64_t>(kRounds - 4 * in_turn))
        << "stacks walked in full again and again";
  }
}

// A walk is kept with the id of its own frames only: keep_repeated_walk() given frames
// that are not the ones the walk cache holds (here one frame altered, as if the caller
// mixed up two walks) keeps nothing, so the next walk of that stack is not known by that id.
constexpr StackId kKeptId = 4242;

[[gnu::noinline]] StackId keep_then_recall(int pass, bool altered,
                                           std::uint32_t recall_want = kMaxFramesCapture) {
  const WalkStart start = here();
  if (pass == 1) return repeated_stack(recall_want, start).id;
  std::uintptr_t frames[kMaxFramesCapture + kOwnFramesSlack];
  std::uint64_t hash = 0;
  KnownStack known;
  const std::uint32_t depth = capture_stack(frames, kMaxFramesCapture, &hash, &known, start);
  if (altered) frames[depth / 2] ^= 0x10;
  keep_repeated_walk(frames, depth, kMaxFramesCapture, start, kKeptId);
  g_sink = g_sink + depth;
  return kNoStack;
}

TEST_F(Unwind, AWalkIsKeptWithTheIdOfItsOwnFramesOnly) {
  for (const bool altered : {false, true}) {
    StackId recalled = kNoStack;
    std::thread([&] {  // a thread of its own: an empty walk cache and no kept walks
      for (int pass = 0; pass < g_two; ++pass) {
        int p = pass;
        asm volatile("" : "+r"(p));  // one call site for both passes
        const StackId id = keep_then_recall(p, altered);
        if (p == 1) recalled = id;
      }
    })
        .join();
    EXPECT_EQ(recalled, altered ? kNoStack : kKeptId) << (altered ? "altered frames" : "the walk's frames");
  }
}

[[gnu::noinline]] void forget_frame_rules_if(bool unload) {
  if (unload) forget_frame_rules();  // as a dlclose does
}

// A kept walk is known again only under the rules and the frame limit it was kept with:
// after code is unloaded (other code may sit at the same addresses) or with another frame
// limit (its walk ends elsewhere), the stack is walked in full.
TEST_F(Unwind, AKeptWalkIsKnownOnlyUnderTheRulesAndFrameLimitItWasKeptWith) {
  struct Case {
    const char* what;
    bool unload;
    std::uint32_t recall_want;
    StackId expected;
  };
  for (const Case& c : {Case{"the same rules and limit", false, kMaxFramesCapture, kKeptId},
                        Case{"code unloaded in between", true, kMaxFramesCapture, kNoStack},
                        Case{"another frame limit", false, 4, kNoStack}}) {
    StackId id_of_pass[2] = {kNoStack, kNoStack};
    std::thread([&] {  // a thread of its own: an empty walk cache and no kept walks
      // What each pass does, as data: a test of the pass in the loop lets GCC split the
      // call in two (two call sites, two stacks).
      const bool unload_before[2] = {false, c.unload};
      const std::uint32_t want_of_pass[2] = {kMaxFramesCapture, c.recall_want};
      for (int pass = 0; pass < g_two; ++pass) {
        int p = pass;
        asm volatile("" : "+r"(p));  // one call site for both passes
        forget_frame_rules_if(unload_before[p]);
        id_of_pass[p] = keep_then_recall(p, false, want_of_pass[p]);
      }
    })
        .join();
    EXPECT_EQ(id_of_pass[1], c.expected) << c.what;
  }
}

// A thread whose stacks do not repeat stops asking the kept walks after a run of walks kept
// with no stack known in between, and tries again after a run of walks in full. The walks
// are one stack, kept again and again and asked for only at the end: all from one call
// site, in a function of their own (a loop whose body tests the counter gets its last
// round peeled by GCC, with a call site of its own).
constexpr std::uint32_t kToRest = RepeatedWalks::kUnknownToRest;
constexpr std::uint32_t kRestWalks = kToRest + RepeatedWalks::kRestingWalks;

[[gnu::noinline]] void rest_walk(std::uint32_t walk) {
  int pass = walk == kRestWalks ? 1 : 0;
  asm volatile("" : "+r"(pass));
  const StackId id = keep_then_recall(pass, false);
  asm volatile("" : "+r"(walk));  // nor a call site per test below (jump threading)
  if (walk == 0) {
    EXPECT_TRUE(ask_repeated_walks()) << "a kept walk is asked for";
  } else if (walk == kToRest - 2) {
    EXPECT_TRUE(ask_repeated_walks()) << "resting too early";
  } else if (walk == kToRest - 1) {
    EXPECT_FALSE(ask_repeated_walks()) << "asking after walks that never repeated";
  } else if (walk == kRestWalks - 2) {
    EXPECT_FALSE(ask_repeated_walks()) << "asking again too early";
  } else if (walk == kRestWalks - 1) {
    EXPECT_TRUE(ask_repeated_walks()) << "never tried again";
  } else if (walk == kRestWalks) {
    EXPECT_EQ(id, kKeptId) << "the walk kept when trying again is not known";
  }
}

TEST_F(Unwind, AThreadWhoseStacksDoNotRepeatStopsAskingAndTriesAgain) {
  std::thread([] {  // a thread of its own: no kept walks, no memo hits yet
    for (std::uint32_t walk = 0; walk <= kRestWalks; ++walk) {
      std::uint32_t w = walk;
      asm volatile("" : "+r"(w));
      rest_walk(w);
    }
  })
      .join();
}

TEST_F(Unwind, TheCacheIsDroppedWithTheRulesWhenCodeIsUnloaded) {
  forget_frame_rules();  // as a dlclose does: the first walk below starts afresh too
  for (const char* path : {LIVEHEAP_UNWIND_MODULE_A, LIVEHEAP_UNWIND_MODULE_B, LIVEHEAP_UNWIND_MODULE_A}) {
    void* handle = nullptr;
    const std::uint64_t before = reused_frames();
    expect_same_stacks(call_module(path, &handle), path);
    EXPECT_EQ(reused_frames(), before) << "a walk reused steps cached before a dlclose";
    const std::uint64_t second = reused_frames();
    expect_same_stacks(call_module(path, &handle), path);  // loaded twice: one dlclose frees it
    EXPECT_GT(reused_frames(), second);
    ASSERT_EQ(dlclose(handle), 0);
    ASSERT_EQ(dlclose(handle), 0);
  }
}

// A signal handler that walks while this thread is walking: the nested walk leaves the
// cache alone (it goes to another unwinder), the interrupted one finishes with it intact.
std::atomic<long> g_handler_walks{0};
void walk_in_handler(int) {
  std::uintptr_t frames[kMaxFramesCapture + kOwnFramesSlack];
  std::uint32_t depth = 0;
  capture_stack_with(Unwinder::frame_rules, frames, 64, &depth);  // allocates nothing
  g_handler_walks.fetch_add(1, std::memory_order_relaxed);
}

TEST_F(Unwind, WalksInterruptedByAHandlerThatWalksStayExact) {
  struct sigaction action {
  }, old{};
  action.sa_handler = walk_in_handler;
  action.sa_flags = SA_RESTART;
  sigemptyset(&action.sa_mask);
  ASSERT_EQ(sigaction(SIGALRM, &action, &old), 0);
  const itimerval every{{0, 50}, {0, 50}}, off{};
  ASSERT_EQ(setitimer(ITIMER_REAL, &every, nullptr), 0);
  const std::vector<Shape> a{Shape::plain, Shape::alloca_frame, Shape::plain, Shape::plain};
  const std::vector<Shape> b{Shape::plain, Shape::realigned, Shape::plain};
  for (int i = 0; i < 3000 && !HasFailure(); ++i)
    expect_same_stacks(capture_through(i % 3 ? a : b), ("walk " + std::to_string(i)).c_str());
  setitimer(ITIMER_REAL, &off, nullptr);
  sigaction(SIGALRM, &old, nullptr);
  EXPECT_GT(g_handler_walks.load(), 10);
}

// This test links the engine's objects: the engine's own code is its section only
// (own_code.hpp), never the rest of the executable it shares with the test.
[[gnu::noinline]] std::uintptr_t first_frame_of_capture(std::uint32_t* depth) {
  std::uintptr_t frames[kMaxFramesCapture + kOwnFramesSlack];
  std::uint64_t hash = 0;
  *depth = capture_stack(frames, 16, &hash);
  g_capture_stack_depth = *depth;  // work after the call: not a tail call
  return *depth == 0 ? 0 : frames[0];
}

TEST(OwnCode, TheHooksAndTheWalkAreOwnCodeTheTestIsNot) {
  EXPECT_TRUE(is_own_code(reinterpret_cast<std::uintptr_t>(&::malloc)));
  EXPECT_TRUE(is_own_code(reinterpret_cast<std::uintptr_t>(&::free)));
  using Capture =
      std::uint32_t (*)(std::uintptr_t*, std::uint32_t, std::uint64_t*, KnownStack*, const WalkStart&);
  EXPECT_TRUE(is_own_code(reinterpret_cast<std::uintptr_t>(static_cast<Capture>(&capture_stack))));
  EXPECT_FALSE(is_own_code(reinterpret_cast<std::uintptr_t>(&first_frame_of_capture)));
  EXPECT_FALSE(is_own_code(reinterpret_cast<std::uintptr_t>(&capture_all)));
  // The first frame kept is the test's function that called capture_stack, in this
  // executable, as the engine's own code is too.
  std::uint32_t depth = 0;
  const std::uintptr_t first = first_frame_of_capture(&depth);
  const auto function = reinterpret_cast<std::uintptr_t>(&first_frame_of_capture);
  ASSERT_GE(depth, 2u);
  EXPECT_GT(first, function);
  EXPECT_LT(first - function, 256u) << "the first frame is not first_frame_of_capture";
}

TEST(FrameRules, AFunctionsEntryHasTheCallsCfa) {
  // At a function's first instruction only the call has touched the stack.
  const auto entry = reinterpret_cast<std::uintptr_t>(&capture_through);
  const FrameRule rule = find_frame_rule(entry);
  EXPECT_EQ(rule.kind, FrameRule::Kind::step);
  EXPECT_FALSE(rule.cfa_from_rbp);
  EXPECT_EQ(rule.cfa_offset, 8);
  EXPECT_EQ(rule.rbp_slot, 0);
}

TEST(FrameRules, AddressesWithoutCodeAreUnsupported) {
  static int data = 0;
  EXPECT_EQ(find_frame_rule(reinterpret_cast<std::uintptr_t>(&data)).kind, FrameRule::Kind::unsupported);
  EXPECT_EQ(find_frame_rule(0x10).kind, FrameRule::Kind::unsupported);
}

TEST(FrameRules, PackRoundTrips) {
  for (const FrameRule r :
       {FrameRule{FrameRule::Kind::step, false, 0, 8}, FrameRule{FrameRule::Kind::step, true, -16, 16},
        FrameRule{FrameRule::Kind::step, false, -32768, 2147483647},
        FrameRule{FrameRule::Kind::outermost, false, 0, 0},
        FrameRule{FrameRule::Kind::unsupported, true, 32767, -5}}) {
    EXPECT_EQ(FrameRule::unpack(r.pack()), r);
    EXPECT_NE(r.pack(), 0u);  // 0 means "no rule" in the caches
  }
}

FrameRule rule_for(std::uintptr_t key, std::uint32_t salt) {
  // Distinct per key (and per salt), so a rule read for the wrong key is detectable.
  return {FrameRule::Kind::step, (key & 1) != 0, static_cast<std::int16_t>(-8 * (salt % 100 + 1)),
          static_cast<std::int32_t>(key & 0x7fffffff)};
}

TEST(FrameRuleCache, MatchesAModelThroughGrowthAndClear) {
  static FrameRuleCache cache;
  std::mt19937_64 rng(7);
  std::vector<std::uintptr_t> keys;
  for (int i = 0; i < 20000; ++i) keys.push_back(0x7f0000000000ull + (rng() % 50000000));
  for (std::uintptr_t k : keys) cache.insert(k, rule_for(k, 0), cache.generation());
  EXPECT_GT(cache.size(), 19000u);  // a few keys repeat
  for (std::uintptr_t k : keys) {
    const std::uint64_t bits = FrameRuleCache::lookup(cache.view(), k);
    ASSERT_NE(bits, 0u);
    EXPECT_EQ(FrameRule::unpack(bits), rule_for(k, 0));
  }
  EXPECT_EQ(FrameRuleCache::lookup(cache.view(), 0x1234), 0u);
  // A rule computed before a clear (an older generation) is not cached after it.
  const std::uint32_t before = cache.generation();
  cache.clear();
  EXPECT_EQ(cache.size(), 0u);
  cache.insert(keys[0], rule_for(keys[0], 0), before);
  EXPECT_EQ(FrameRuleCache::lookup(cache.view(), keys[0]), 0u);
  for (std::uintptr_t k : keys) EXPECT_EQ(FrameRuleCache::lookup(cache.view(), k), 0u);
  // A reader's view from before a clear misses a slot refilled after it, even with the same
  // key: a lookup that read the key before the clear and its rule after the refill sees a
  // key that is not its own on the second read.
  const FrameRuleCache::View old_view = cache.view();
  cache.insert(keys[0], rule_for(keys[0], 1), cache.generation());
  cache.clear();
  cache.insert(keys[0], rule_for(keys[0], 2), cache.generation());
  EXPECT_EQ(FrameRuleCache::lookup(cache.view(), keys[0]), rule_for(keys[0], 2).pack());
  EXPECT_EQ(FrameRuleCache::lookup(old_view, keys[0]), 0u);
}

TEST(FrameRuleCache, ReadersNeverSeeAnotherKeysRuleWhileClearedAndRefilled) {
  static FrameRuleCache cache;
  constexpr std::uintptr_t kKeys = 2000;
  std::atomic<bool> done{false};
  std::atomic<int> started{0};
  std::atomic<long> wrong{0}, hits{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 2; ++r)
    readers.emplace_back([&] {
      started.fetch_add(1);
      while (!done.load(std::memory_order_relaxed))
        for (std::uintptr_t k = 1; k <= kKeys; ++k) {
          const std::uint64_t bits = FrameRuleCache::lookup(cache.view(), k * 64);
          if (bits == 0) continue;
          hits.fetch_add(1, std::memory_order_relaxed);
          if (static_cast<std::uintptr_t>(FrameRule::unpack(bits).cfa_offset) != ((k * 64) & 0x7fffffff))
            wrong.fetch_add(1, std::memory_order_relaxed);
        }
    });
  while (started.load() < 2) std::this_thread::yield();
  // Each round fills the slots in another order, so slots change keys between rounds. On a
  // busy machine (or one core) the readers may get no time during 300 quick rounds: the
  // rounds go on, yielding, until they have read filled slots, for at most 20 seconds.
  std::mt19937 rng(3);
  std::vector<std::uintptr_t> order(kKeys);
  for (std::uintptr_t k = 0; k < kKeys; ++k) order[k] = (k + 1) * 64;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  for (int round = 0; round < 300 || (hits.load() < 100000 && std::chrono::steady_clock::now() < deadline);
       ++round) {
    std::shuffle(order.begin(), order.end(), rng);
    for (std::uintptr_t k : order)
      cache.insert(k, rule_for(k, static_cast<std::uint32_t>(round)), cache.generation());
    std::this_thread::yield();
    cache.clear();
  }
  done = true;
  for (std::thread& t : readers) t.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_GE(hits.load(), 100000);  // the readers did read filled slots
}

}  // namespace
}  // namespace liveheap::engine::test
