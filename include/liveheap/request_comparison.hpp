// Per-request comparison: the manual tracemalloc workflow, automated. The first request
// has a reference snapshot taken (logged as "liveheap: request 1: reference snapshot
// taken, heap SIZE"); every N requests after it, the heap is compared with that reference
// and the top K lines of growth are logged through a callback the host chooses, each with
// its verdict once the history can tell (as /diff?verdicts=1 prints it); when the host tags
// its requests (liveheap/request_scope.hpp), the top K routes whose requests grew the heap
// follow, under "  which requests grew it, by route:". Both run on
// a liveheap thread, shortly after the request that asks for them: the request goes on.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>

#include "liveheap/export.hpp"
#include "liveheap/snapshot.hpp"

LIVEHEAP_API_BEGIN

namespace http {

struct ComparisonConfig {
  unsigned every_n = 100;  // compare on requests 1 + N, 1 + 2N, ...
  unsigned top_k = 10;     // lines of growth per comparison
  KeyType key = KeyType::line;
  // One call per line, no trailing '\n', on the comparison's thread (never concurrently).
  std::function<void(std::string_view line)> log;
};

// Thread-safety: on_request may be called from any number of threads at once and never
// waits: it adds one to an atomic count and, on request 1 and every N-th after it, wakes the
// comparison's own thread (started at request 1), which takes the snapshots and calls `log`.
// Comparisons run one at a time; requests due while one runs are served by one comparison
// after it, named by the latest of them. The destructor waits for a running comparison.
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

}  // namespace http

LIVEHEAP_API_END
