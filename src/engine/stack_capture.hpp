// Captures the caller's stack as raw return addresses, without allocating.
// Thread-safety: capture_stack is safe on any thread once load_unwinder has returned.
#pragma once

#include <cstddef>
#include <cstdint>

namespace liveheap::engine {

// The deepest stack the engine keeps (liveheap::kMaxFrames mirrors it).
inline constexpr std::uint32_t kMaxFramesCapture = 128;

// Loads libunwind privately (dlopen RTLD_LOCAL): linked normally, its exported _Unwind_*
// would replace libgcc_s's for the whole process and make every C++ throw ~90x slower.
// Falls back to libgcc's _Unwind_Backtrace (~10x slower) when libunwind is missing.
// Call outside the hooks (it allocates); idempotent.
void load_unwinder() noexcept;

// Our own frames on top of a captured stack (hook, engine, operator new): captured, then
// dropped. `frames` must hold max + kOwnFramesSlack entries.
inline constexpr std::uint32_t kOwnFramesSlack = 8;

// Fills `frames` with up to `max` return addresses of the caller's stack, liveheap's own
// frames at the top removed. Returns how many were written.
std::uint32_t capture_stack(std::uintptr_t* frames, std::uint32_t max) noexcept;

// True when `address` lies in this library's own code.
bool is_own_code(std::uintptr_t address) noexcept;

}  // namespace liveheap::engine
