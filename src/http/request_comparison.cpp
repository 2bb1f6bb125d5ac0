// Per-request comparison against the first request's snapshot (liveheap/request_comparison.hpp).
// Everything here runs under IgnoreScope: watching must not show up as growth.
#include "liveheap/request_comparison.hpp"

#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>

#include "liveheap/format.hpp"
#include "liveheap/tracker.hpp"

namespace liveheap::http {

struct RequestComparison::Impl {
  ComparisonConfig config;
  mutable std::mutex mutex;
  std::uint64_t requests = 0;            // guarded by mutex
  std::optional<Snapshot> reference;     // guarded by mutex; taken at request 1
  std::uint64_t reference_request = 0;   // guarded by mutex; when `reference` was taken

  // Logs the top K growing lines of the heap now against the reference. Holds `mutex`.
  void compare() {
    const Snapshot now = take_snapshot();
    const auto diffs = now.compare_to(*reference, config.key);
    const std::int64_t growth = now.total_size() - reference->total_size();
    config.log("liveheap: request " + std::to_string(requests) + ": heap " +
               format_size(static_cast<double>(now.total_size()), false) + " (" +
               format_size(static_cast<double>(growth), true) + " since request " +
               std::to_string(reference_request) + "); what grew most, by " +
               std::string(to_string(config.key)) + ":");
    unsigned shown = 0;
    for (const StatisticDiff& diff : diffs) {
      if (shown == config.top_k) break;
      if (diff.size_diff <= 0) continue;  // leaks grow; what shrank is not the question here
      config.log("  " + format_statistic_diff(diff, config.key));
      ++shown;
    }
    if (shown == 0) config.log("  (nothing grew)");
  }
};

RequestComparison::RequestComparison(ComparisonConfig config) : impl_(std::make_unique<Impl>()) {
  if (config.every_n == 0) throw std::invalid_argument("RequestComparison: every_n must be > 0");
  if (config.top_k == 0) throw std::invalid_argument("RequestComparison: top_k must be > 0");
  if (!config.log) throw std::invalid_argument("RequestComparison: log must be set");
  impl_->config = std::move(config);
}

RequestComparison::~RequestComparison() = default;

void RequestComparison::on_request() noexcept {
  const IgnoreScope ignore;
  std::lock_guard lock(impl_->mutex);
  const std::uint64_t request = ++impl_->requests;
  // Work only on request 1 and every N after it: a failure is logged at most that often.
  if (request != 1 && (request - 1) % impl_->config.every_n != 0) return;
  try {
    // The reference is the first request that found tracing on (request 1, normally).
    if (impl_->reference) return impl_->compare();
    impl_->reference = take_snapshot();
    impl_->reference_request = request;
  } catch (const std::exception& e) {
    try {
      impl_->config.log(std::string("liveheap: request comparison skipped: ") + e.what());
    } catch (...) {
      // The host's logger failed too; the request must go on regardless.
    }
  }
}

std::uint64_t RequestComparison::requests() const noexcept {
  std::lock_guard lock(impl_->mutex);
  return impl_->requests;
}

}  // namespace liveheap::http
