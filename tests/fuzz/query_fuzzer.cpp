// libFuzzer target for the request-target and query parsers (src/http/query.cpp): any bytes
// either parse into values within their documented ranges or are a 400 RequestError; any
// other exception, a crash or a sanitizer report is a bug. Input: two bytes of ParamSet
// (the parameters the route takes), then the request target.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "liveheap/tracker.hpp"
#include "query.hpp"

namespace {

using namespace liveheap::http;

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "query_fuzzer: %s\n", what);
  std::abort();
}

void check(bool ok, const char* what) {
  if (!ok) fail(what);
}

// What parse_query promises about a query it accepts.
void check_query(const Query& q, ParamSet allowed) {
  check(q.limit >= 1 && q.limit <= kMaxLimit, "limit out of range");
  check(q.seconds <= kMaxSeconds, "seconds out of range");
  check(!q.frames || (*q.frames >= 1 && *q.frames <= liveheap::kMaxFrames), "frames out of range");
  check(!q.sample_interval || *q.sample_interval >= kMinHttpSampleInterval,
        "sample_interval below the HTTP floor");
  check(!q.pid || (*q.pid >= kAllProcesses && *q.pid <= kMaxPid), "pid out of range");
  check(q.include.size() + q.exclude.size() == q.filters.size(), "filters lost");
  check(!(q.cumulative && q.key == liveheap::KeyType::traceback), "cumulative with traceback");
  check(!q.format || (*q.format != Format::folded && *q.format != Format::folded2) ||
            (allowed & (kFolded | kFolded2)),
        "a folded format where the route takes none");
  check(q.seconds == 0 || (allowed & kSeconds), "seconds= where the route takes none");
  check((!q.mode && !q.frames && !q.sample_interval) || (allowed & kStartOptions),
        "start options where the route takes none");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const ParamSet allowed = (data[0] | data[1] << 8) & 0x7FF;
  const std::string_view target(reinterpret_cast<const char*>(data + 2), size - 2);
  try {
    const Target t = split_target(target);
    check(!t.path.empty() && t.path.front() == '/', "a path that is not absolute");
    check_query(parse_query(t.query, allowed), allowed);
  } catch (const RequestError& e) {
    check(e.status() == Status::bad_request, "a parse error that is not a 400");
    // One line: no control character. (A bad glob's reason quotes the glob, UTF-8 and all.)
    for (const char c : std::string_view(e.what()))
      check(static_cast<unsigned char>(c) >= 0x20 && c != 0x7F, "a reason that is not one line");
  } catch (...) {
    fail("an exception other than RequestError");
  }
  return 0;
}
