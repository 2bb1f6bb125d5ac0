// Per-request comparison against the first request's snapshot (liveheap/request_comparison.hpp).
// The request path only counts (one atomic add); the snapshots, diffs and log lines happen on
// the comparison's own thread, under IgnoreScope: watching must not show up as growth.
#include "liveheap/request_comparison.hpp"

#include <algorithm>
#include <atomic>
#include <limits>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "blocked_signals.hpp"
#include "liveheap/format.hpp"
#include "liveheap/history.hpp"
#include "liveheap/tracker.hpp"

LIVEHEAP_NAMESPACE_BEGIN
namespace http {
namespace {

constexpr std::uint64_t kStopping = std::numeric_limits<std::uint64_t>::max();

}  // namespace

struct RequestComparison::Impl {
  ComparisonConfig config;
  std::atomic<std::uint64_t> requests{0};
  // The latest request that asked for work (request 1, 1 + N, ...); the worker waits for it
  // to change. kStopping ends the worker.
  std::atomic<std::uint64_t> due{0};
  std::once_flag worker_started;
  std::thread worker;

  // The worker's own: touched by no other thread.
  std::uint64_t done = 0;               // the last `due` handled
  std::optional<Snapshot> reference;    // taken at the first request that found tracing on
  std::uint64_t reference_request = 0;  // when `reference` was taken

  void start_worker() noexcept {
    std::call_once(worker_started, [this] {
      try {
        const IgnoreScope ignore;
        const engine::BlockedSignals quiet;  // the host's signals are the host's threads'
        worker = std::thread([this] { run(); });
      } catch (const std::exception& e) {
        log_failure(std::string("no comparison thread: ") + e.what());
      }
    });
  }

  void run() noexcept {
    const IgnoreScope ignore;  // for the thread's whole life
    for (;;) {
      due.wait(done, std::memory_order_acquire);
      done = due.load(std::memory_order_acquire);
      if (done == kStopping) return;
      work(done);
    }
  }

  // The reference at the first call, a comparison at every later one.
  void work(std::uint64_t request) noexcept {
    try {
      if (reference) return compare(request);
      reference = take_snapshot();
      reference_request = request;
      config.log("liveheap: request " + std::to_string(request) + ": reference snapshot taken, heap " +
                 format_size(static_cast<double>(reference->total_size()), false));
    } catch (const std::exception& e) {
      log_failure(e.what());
    }
  }

  void log_failure(const std::string& what) noexcept {
    try {
      config.log("liveheap: request comparison skipped: " + what);
    } catch (...) {
      // The host's logger failed too; nothing else to tell.
    }
  }

  // Logs the top K growing lines of the heap now against the reference, then, when the
  // host tags its requests (liveheap/request_scope.hpp), the routes whose requests grew it.
  void compare(std::uint64_t request) {
    const Snapshot now = take_snapshot();
    const std::int64_t growth = now.total_size() - reference->total_size();
    config.log("liveheap: request " + std::to_string(request) + ": heap " +
               format_size(static_cast<double>(now.total_size()), false) + " (" +
               format_size(static_cast<double>(growth), true) + " since request " +
               std::to_string(reference_request) + "); what grew most, by " +
               std::string(to_string(config.key)) + ":");
    const History history = liveheap::history();
    if (log_growth(now, history, config.key) == 0) config.log("  (nothing grew)");
    if (config.key == KeyType::route) return;
    const auto routes = now.compare_to(*reference, KeyType::route);
    const bool tagged = std::any_of(routes.begin(), routes.end(), [](const StatisticDiff& d) {
      return d.size_diff > 0 && route_of(d.traceback) != kNoRequest;
    });
    if (!tagged) return;
    config.log("  which requests grew it, by route:");
    log_growth(now, history, KeyType::route, &routes);
  }

  // The top K growing keys of `now` against the reference (`diffs` when already made), each
  // with its verdict as /diff?verdicts=1 gives it once the history can tell (a young
  // history's "unknown" is left out). Returns how many were logged.
  unsigned log_growth(const Snapshot& now, const History& history, KeyType key,
                      const std::vector<StatisticDiff>* diffs = nullptr) {
    std::vector<StatisticDiff> made;
    if (diffs == nullptr) diffs = &(made = now.compare_to(*reference, key));
    std::optional<HistoryIndex> index;
    if (!history.points.empty()) index.emplace(history, key, false, std::vector<Filter>{});
    unsigned shown = 0;
    for (const StatisticDiff& diff : *diffs) {
      if (shown == config.top_k) break;
      if (diff.size_diff <= 0) continue;  // leaks grow; what shrank is not the question here
      std::string line = "  " + format_statistic_diff(diff, key);
      if (const KeySeries* series = index ? index->find(diff.traceback) : nullptr) {
        const Verdict verdict = classify(history, *series);
        if (verdict.trend != Trend::unknown) line += verdict_text(verdict);
      }
      config.log(line);
      ++shown;
    }
    return shown;
  }
};

RequestComparison::RequestComparison(ComparisonConfig config) : impl_(std::make_unique<Impl>()) {
  if (config.every_n == 0) throw std::invalid_argument("RequestComparison: every_n must be > 0");
  if (config.top_k == 0) throw std::invalid_argument("RequestComparison: top_k must be > 0");
  if (!config.log) throw std::invalid_argument("RequestComparison: log must be set");
  impl_->config = std::move(config);
}

RequestComparison::~RequestComparison() {
  impl_->due.store(kStopping, std::memory_order_release);
  impl_->due.notify_one();
  if (impl_->worker.joinable()) impl_->worker.join();
}

void RequestComparison::on_request() noexcept {
  const std::uint64_t request = impl_->requests.fetch_add(1, std::memory_order_relaxed) + 1;
  // Work only on request 1 and every N after it.
  if (request != 1 && (request - 1) % impl_->config.every_n != 0) return;
  impl_->start_worker();
  // Raised, never lowered: a later request's store may have come first.
  std::uint64_t due = impl_->due.load(std::memory_order_relaxed);
  while (due < request && !impl_->due.compare_exchange_weak(due, request, std::memory_order_release,
                                                            std::memory_order_relaxed)) {
  }
  impl_->due.notify_one();  // a futex wake, no lock (and no call at all while no one waits)
}

std::uint64_t RequestComparison::requests() const noexcept {
  return impl_->requests.load(std::memory_order_relaxed);
}

}  // namespace http
LIVEHEAP_NAMESPACE_END
