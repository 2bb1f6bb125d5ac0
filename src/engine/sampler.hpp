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

// 1/p(s), the weight of a sample drawn for a block of s bytes (0 when p(s) is 0).
double inverse_probability(std::uint64_t size, std::uint64_t interval) noexcept;

// What a sample counts: its `size` bytes and one block, each times `inverse` (1/p of the
// size it was drawn at). A function of the two alone, so that the weight added when the
// sample is counted is the one taken off when it is freed or resized.
//
// realloc. Within the block's usable size (the allocator's usable size for its request,
// which is what the program is told whether the block is sampled or not) a realloc keeps
// the block's draw: a sampled block stays sampled with its `inverse`, counting its new size
// s' (at the realloc's stack, as exact mode counts it); an unsampled block stays unsampled.
// Its expected estimate is p(s) * s' / p(s) = s', the truth, at whichever stack. Past the
// usable size a realloc is a new allocation, drawn afresh at s' for every block, sampled or
// not: expected estimate s' again. What must never happen is a draw that depends on whether
// the block was sampled: a program that shrinks only the blocks whose usable size shows
// room over (redis's sdsRemoveFreeSpace) would shrink only the sampled ones if they
// reported their whole page run, and a new draw at the smaller size would lose most. (Keeping
// the draw past the usable size too would stay unbiased, but a 16-byte draw grown to
// 100 MB would carry the weight of a 16-byte one: a huge variance.)
struct SampleWeight {
  std::int64_t bytes = 0;  // size * inverse, rounded
  std::int64_t count = 0;  // kCountUnit * inverse, rounded
};
SampleWeight sample_weight(std::uint64_t size, double inverse) noexcept;

// A draw from Exp(mean), at least 1, from the thread's xorshift state.
std::int64_t next_sample_countdown(std::uint64_t* rng, std::uint64_t mean) noexcept;
// A per-thread seed: `seed` (0 = unpredictable) mixed with the thread's arrival order.
std::uint64_t thread_seed(std::uint64_t seed, std::uint64_t thread_index) noexcept;

}  // namespace liveheap::engine
