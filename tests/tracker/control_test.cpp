// start/stop/clear/peak semantics (tracemalloc's), option validation, the tracker's own
// memory kept out of every report, and the allocation functions' C contracts under tracking.
// Not reformatted: an allocation and the __LINE__ that names it share a line or a fixed offset.
// clang-format off
#include <cerrno>
#include <cstdlib>
#include <malloc.h>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "../support/tracing_session.hpp"
#include "liveheap/tracker.hpp"

namespace {

using test_support::TracingSession;
using liveheap::Mode;

// Live bytes and blocks attributed to this file at `line` in a fresh snapshot.
liveheap::Statistic at_line(int line) {
  for (const auto& s : liveheap::take_snapshot().statistics(liveheap::KeyType::line)) {
    const liveheap::Frame& f = s.traceback.at(0);
    if (f.line == static_cast<unsigned>(line) && f.file.ends_with("control_test.cpp")) return s;
  }
  return {};
}

TEST(Control, StartStopClearAndPeak) {
  liveheap::start({Mode::exact, 16});
  EXPECT_TRUE(liveheap::is_tracing());
  EXPECT_EQ(liveheap::options().max_frames, 16u);
  const auto base = liveheap::traced_memory();
  void* a = std::malloc(100000); const int line_a = __LINE__;
  EXPECT_EQ(liveheap::traced_memory().current - base.current, 100000);
  EXPECT_GE(liveheap::traced_memory().peak, liveheap::traced_memory().current);
  EXPECT_EQ(at_line(line_a).size, 100000);
  EXPECT_EQ(at_line(line_a).count, 1);

  std::free(a);
  EXPECT_EQ(liveheap::traced_memory().current, base.current);
  EXPECT_GE(liveheap::traced_memory().peak - base.current, 100000);  // peak remembers it
  liveheap::reset_peak();
  EXPECT_EQ(liveheap::traced_memory().peak, liveheap::traced_memory().current);

  void* b = std::malloc(5000); const int line_b = __LINE__;
  EXPECT_EQ(at_line(line_b).size, 5000);
  liveheap::clear();  // forgets every trace; tracing goes on
  EXPECT_TRUE(liveheap::is_tracing());
  EXPECT_EQ(at_line(line_b).size, 0);
  EXPECT_EQ(liveheap::traced_memory().current, 0);
  std::free(b);  // freeing a forgotten block changes nothing
  EXPECT_EQ(liveheap::traced_memory().current, 0);

  liveheap::stop();
  EXPECT_FALSE(liveheap::is_tracing());
  EXPECT_THROW(liveheap::take_snapshot(), std::runtime_error);
  void* untraced = std::malloc(7777);  // made while stopped: never traced
  liveheap::start({Mode::exact, 16});
  EXPECT_EQ(liveheap::traced_memory().current, 0);
  std::free(untraced);
  EXPECT_EQ(liveheap::traced_memory().current, 0);
  liveheap::stop();
}

TEST(Control, RejectsBadOptions) {
  EXPECT_THROW(liveheap::start({Mode::off, 32}), std::invalid_argument);
  EXPECT_THROW(liveheap::start({Mode::exact, 0}), std::invalid_argument);
  EXPECT_THROW(liveheap::start({Mode::exact, liveheap::kMaxFrames + 1}), std::invalid_argument);
  EXPECT_THROW(liveheap::start({Mode::sampled, 32, 0}), std::invalid_argument);
  EXPECT_FALSE(liveheap::is_tracing());
}

// start(Options) names the field and its range; the range is the one the environment
// (and HTTP) enforce, so a value refused here is refused there with the same bounds.
TEST(Control, BadOptionsAreNamedWithTheSettingsRanges) {
  const auto refusal = [](const liveheap::Options& o) -> std::string {
    try {
      liveheap::start(o);
      liveheap::stop();
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "";
  };
  liveheap::Options o;
  o.max_frames = liveheap::kMaxFrames + 1;
  EXPECT_EQ(refusal(o), "max_frames must be 1..128, got 129");
  o = {};
  o.sample_interval = (std::uint64_t{1} << 40) + 1;
  EXPECT_EQ(refusal(o), "sample_interval must be 1..2^40 bytes, got 1099511627777");
  o = {};
  o.history_interval_s = 86401;
  EXPECT_EQ(refusal(o), "history_interval_s must be 0..86400 seconds, got 86401");
  o = {};
  o.mode = Mode::off;
  EXPECT_EQ(refusal(o), "mode 'off' cannot be started: call liveheap::stop() instead");
  EXPECT_FALSE(liveheap::is_tracing());

  ::setenv("LIVEHEAP_FRAMES", "129", 1);
  try {
    liveheap::options_from_environment(Mode::exact);
    ADD_FAILURE() << "LIVEHEAP_FRAMES=129 accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "LIVEHEAP_FRAMES='129' is not a whole number from 1 to 128");
  }
  ::setenv("LIVEHEAP_FRAMES", "128", 1);
  EXPECT_EQ(liveheap::options_from_environment(Mode::exact)->max_frames, 128u);
  ::unsetenv("LIVEHEAP_FRAMES");
}

#ifdef LIVEHEAP_SANITIZED
// In a sanitized tree the sanitizer's malloc comes first, as another allocator would: start
// says so and nothing changes.
TEST(Control, StartRefusesWhenTheHooksAreNotInEffect) {
  try {
    liveheap::start({Mode::exact, 32});
    ADD_FAILURE() << "start() succeeded without the hooks";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("LD_PRELOAD=libliveheap_preload.so"), std::string::npos);
  }
  EXPECT_FALSE(liveheap::is_tracing());
  EXPECT_THROW((void)liveheap::take_snapshot(), std::runtime_error);
  EXPECT_EQ(liveheap::traced_memory().current, 0);
  liveheap::stop();
}
#endif

TEST(Control, TrackerMemoryNeverShowsInReports) {
  TracingSession tracing({Mode::exact, 32});
  const auto first = liveheap::take_snapshot();  // warms the symbolizer: ~MBs of its own
  for (int i = 0; i < 3; ++i) (void)liveheap::take_snapshot();
  const auto later = liveheap::take_snapshot();
  EXPECT_GT(liveheap::tracker_memory(), 0);
  EXPECT_EQ(later.total_size(), first.total_size())
      << "taking snapshots must not show up as traced growth";
  EXPECT_EQ(later.info().tracker_memory > 0, true);
  {
    liveheap::IgnoreScope ignore;
    std::vector<char> own(1 << 20);  // the tracker's own: not traced
    EXPECT_EQ(liveheap::traced_memory().current, later.info().traced_current);
  }
}

TEST(Control, DepthIsHonoured) {
  TracingSession tracing({Mode::exact, 3});
  void* p = std::malloc(64);
  const liveheap::Snapshot snapshot = liveheap::take_snapshot();
  for (const auto& t : snapshot.traces()) EXPECT_LE(t.traceback.size(), 3u);
  std::free(p);
}

// start() builds the history and peak recorders (on the first start, their state; on every
// start, their threads): the tracker's own memory, never a trace of the caller's.
TEST(Control, StartTracesNothingOfItsOwn) {
  TracingSession tracing({Mode::exact, 32});
  EXPECT_EQ(liveheap::traced_memory().current, 0);
  EXPECT_TRUE(liveheap::take_snapshot().traces().empty());
  liveheap::start_recorders();
  EXPECT_EQ(liveheap::traced_memory().current, 0);
}

TEST(Control, AllocationFunctionsKeepTheirContracts) {
  TracingSession tracing({Mode::exact, 32});
  const std::int64_t base = liveheap::traced_memory().current;
  void* p = nullptr;
  EXPECT_EQ(posix_memalign(&p, 3, 10), EINVAL);
  EXPECT_EQ(posix_memalign(&p, 4096, 10), 0);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 4096, 0u);
  void* q = aligned_alloc(64, 128);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(q) % 64, 0u);
  void* m = memalign(32, 1000);
  void* v = valloc(100);
  void* pv = pvalloc(100);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(v) % 4096, 0u);
  EXPECT_GE(malloc_usable_size(m), 1000u);
  errno = 0;
  // Sizes that overflow on purpose, and a block used after a realloc that failed (as it may).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Walloc-size-larger-than="
#pragma GCC diagnostic ignored "-Wuse-after-free"
  EXPECT_EQ(calloc(SIZE_MAX / 2, 4), nullptr);
  EXPECT_EQ(errno, ENOMEM);
  void* arr = reallocarray(nullptr, 10, 10);
  EXPECT_EQ(reallocarray(arr, SIZE_MAX / 2, 4), nullptr);  // overflow: arr untouched
  EXPECT_EQ(liveheap::traced_memory().current - base, 10 + 128 + 1000 + 100 + 100 + 100);
  void* grown = realloc(arr, 1 << 20);
#pragma GCC diagnostic pop
  EXPECT_EQ(liveheap::traced_memory().current - base, 10 + 128 + 1000 + 100 + 100 + (1 << 20));
  EXPECT_EQ(realloc(grown, 0), nullptr);  // glibc: frees, returns null
  for (void* x : {p, q, m, v, pv}) free(x);
  EXPECT_EQ(liveheap::traced_memory().current, base);
}

TEST(Control, ExceptionsStillWorkUnderTracking) {
  TracingSession tracing({Mode::exact, 32});
  int caught = 0;
  for (int i = 0; i < 1000; ++i) {
    try {
      throw std::runtime_error("boom " + std::to_string(i));
    } catch (const std::runtime_error& e) {
      caught += e.what()[0] == 'b';
    }
  }
  EXPECT_EQ(caught, 1000);
}

}  // namespace
