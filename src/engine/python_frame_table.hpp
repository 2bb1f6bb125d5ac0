// The Python frames a process's stacks have held: (file, qualified name, line) interned on
// first sight, while the thread that runs the frame still holds its code object, so that
// reports name them from here long after the code may be gone. A stack holds such a frame
// as a synthetic frame value with the top bit set, which no user-space return address has
// (they are below 2^47); the engine names it, it is never symbolized.
// Thread-safety: a frame seen before is found without a lock; a new one is interned under
// a spin lock (a leaf: nothing is taken inside it); entries are written once and never
// change.
#pragma once

#include <cstdint>

#include "python_code.hpp"
#include "shared.hpp"

namespace liveheap::engine {

inline constexpr std::uintptr_t kPythonFrameBit = std::uintptr_t{1} << 63;
inline constexpr bool is_python_frame(std::uintptr_t frame) noexcept {
  return (frame & kPythonFrameBit) != 0;
}

// The frame of `code` running instruction `index`, interned (a cache of recent (code,
// instruction) pairs answers most calls after checking the code's fingerprint); 0 when it
// cannot be read or the table is full.
std::uintptr_t intern_python_frame(const PythonCode& code, std::uint32_t index) noexcept;

// What a Python frame value names (strings valid for the life of the process); false for a
// value no interned frame has.
struct PythonFrameText {
  const char* file = nullptr;
  const char* function = nullptr;
  std::uint32_t line = 0;
};
LIVEHEAP_SHARED bool python_frame_text(std::uintptr_t frame, PythonFrameText* out) noexcept;
// fork(): the insert lock, taken before and released after in both processes.
void python_frames_lock_for_fork() noexcept;
void python_frames_unlock_after_fork() noexcept;
bool python_frames_locked() noexcept;
// Frames interned since start-up.
LIVEHEAP_SHARED std::uint32_t python_frame_count() noexcept;

}  // namespace liveheap::engine
