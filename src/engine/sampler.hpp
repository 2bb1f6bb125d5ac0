// Byte-based Poisson sampling, as Go's and jemalloc's heap profilers do it.
//
// Each thread counts down the bytes it allocates; when the countdown crosses zero the
// allocation that crossed it is sampled and a new countdown is drawn from an exponential
// distribution with mean R (the sample interval). The byte stream is then cut by a Poisson
// process of rate 1/R, so a block of s bytes is sampled with probability
//     p(s) = 1 - exp(-s / R)
// independently of what came before it. Weighting each sample by 1/p(s) blocks and s/p(s)
// bytes makes every sum an unbiased estimate of the true live count and bytes. The relative
// error of a total made of n samples is about 1/sqrt(n): 200 MB of small blocks at R = 512
// KiB gives ~400 samples, ~5%.
//
// The fast path is the countdown alone: a thread-local subtract and a compare.
#pragma once

#include <cstdint>

namespace liveheap::engine {

// Counts live blocks in 1/kCountUnit steps so fractional sample weights add up exactly.
inline constexpr std::int64_t kCountUnit = 4096;

struct SampleWeight {
  std::int64_t bytes = 0;  // s / p(s), rounded
  std::int64_t count = 0;  // kCountUnit / p(s), rounded
};
SampleWeight sample_weight(std::uint64_t size, std::uint64_t interval) noexcept;

// A draw from Exp(mean), at least 1, from the thread's xorshift state.
std::int64_t next_sample_countdown(std::uint64_t* rng, std::uint64_t mean) noexcept;
// A per-thread seed: `seed` (0 = unpredictable) mixed with the thread's arrival order.
std::uint64_t thread_seed(std::uint64_t seed, std::uint64_t thread_index) noexcept;

}  // namespace liveheap::engine
