// The peak recorder's wake-up call: a liveheap thread sleeps on a futex until the
// allocation path signals that the traced bytes passed the recorder's mark. One signal
// until the recorder takes it, so a heap that keeps growing past the mark costs one
// futex wake, not one a block; and no timer, so an idle process is never woken.
// Thread-safety: signal() from any thread; take() and wait() from the recorder's only.
#pragma once

#include <cstdint>

#include "shared.hpp"

namespace liveheap::engine::peak_signal {

// The allocation path found the traced bytes past the mark: wakes the recorder unless a
// signal is already waiting for it. Its caller's counting is seen by the recorder's look
// that takes the signal, or that look is followed by another.
void signal() noexcept;
// The recorder is about to look: a crossing from now on signals again.
LIVEHEAP_SHARED void take() noexcept;
// How many signals were sent (the futex word).
LIVEHEAP_SHARED std::uint32_t sent() noexcept;
// Blocks until sent() differs from `seen`; returns it. No timeout: only a signal wakes it.
LIVEHEAP_SHARED std::uint32_t wait(std::uint32_t seen) noexcept;

}  // namespace liveheap::engine::peak_signal
