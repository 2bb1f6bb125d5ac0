// The one clock of liveheap's records: unix time in milliseconds, which every snapshot's
// taken_at_ms, history point's t_ms, peak record and baseline age is read on.
// Header only and libc only, so that every layer above may read it.
// Thread-safety: any thread.
#pragma once

#include <time.h>

#include <cstdint>

namespace liveheap::engine {

inline std::int64_t now_ms() noexcept {
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  return static_cast<std::int64_t>(now.tv_sec) * 1000 + now.tv_nsec / 1000000;
}

}  // namespace liveheap::engine
