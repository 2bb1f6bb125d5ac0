// The sampling maths: exponential countdowns and the weights that make totals unbiased.
#include "sampler.hpp"

#include <ctime>

#include "exp_log.hpp"

namespace liveheap::engine {

double inverse_probability(std::uint64_t size, std::uint64_t interval) noexcept {
  // -expm1(-x) is 1 - exp(-x) without losing precision for tiny x.
  const double p = -exp_minus_one(-static_cast<double>(size) / static_cast<double>(interval));
  return p > 0 ? 1.0 / p : 0.0;
}

SampleWeight sample_weight(std::uint64_t size, double inverse) noexcept {
  return {round_to_integer(static_cast<double>(size) * inverse),
          round_to_integer(static_cast<double>(kCountUnit) * inverse)};
}

std::int64_t next_sample_countdown(std::uint64_t* rng, std::uint64_t mean) noexcept {
  // xorshift64*: fast, never zero once seeded non-zero.
  std::uint64_t x = *rng;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *rng = x;
  const std::uint64_t bits = (x * 0x2545f4914f6cdd1dull) >> 11;                     // 53 random bits
  const double u = (static_cast<double>(bits) + 1.0) * (1.0 / 9007199254740992.0);  // (0, 1]
  const double draw = -natural_log(u) * static_cast<double>(mean);
  return draw < 1.0 ? 1 : static_cast<std::int64_t>(draw);
}

std::uint64_t thread_seed(std::uint64_t seed, std::uint64_t thread_index) noexcept {
  if (seed == 0) {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    seed = static_cast<std::uint64_t>(ts.tv_nsec) ^ (static_cast<std::uint64_t>(ts.tv_sec) << 30);
  }
  std::uint64_t x = seed + 0x9e3779b97f4a7c15ull * (thread_index + 1);
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x == 0 ? 1 : x;
}

}  // namespace liveheap::engine
