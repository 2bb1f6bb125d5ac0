// Per-request comparison: the manual tracemalloc workflow, automated. The first request
// takes a reference snapshot; every N requests after it, the heap is compared with that
// reference and the top K lines of growth are logged through a callback the host chooses.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>

#include "liveheap/snapshot.hpp"

namespace liveheap::http {

struct ComparisonConfig {
  unsigned every_n = 100;       // compare on requests 1 + N, 1 + 2N, ...
  unsigned top_k = 10;          // lines of growth per comparison
  KeyType key = KeyType::line;
  std::function<void(std::string_view line)> log;  // one call per line, no trailing '\n'
};

// Thread-safety: on_request may be called from any number of threads at once; a mutex
// guards the reference and the count, so comparisons run one at a time (on the thread of
// the request that triggers one, which that request waits for: a snapshot and a diff).
class RequestComparison {
 public:
  // Throws std::invalid_argument when every_n or top_k is 0 or log is empty.
  explicit RequestComparison(ComparisonConfig config);
  ~RequestComparison();
  RequestComparison(const RequestComparison&) = delete;
  RequestComparison& operator=(const RequestComparison&) = delete;

  // Call once per request the host serves, before serving it. Never throws: a failure
  // (tracing off, say) is logged once per occurrence and the request goes on.
  void on_request() noexcept;
  // Requests counted so far.
  std::uint64_t requests() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace liveheap::http
