// log, expm1 and llround for the sampling maths, without libm: the preload library loads
// nothing but libc (a process that only loads it pays for nothing else), and glibc's libm
// cannot be linked in statically. Within a few units in the last place of libm's over the
// ranges the sampler uses, which is far below the sampling's own noise; they run once per
// sample, never on the fast path.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <cstring>

namespace liveheap::engine {

// x's exponent and mantissa: x = m * 2^e with m in [1, 2), for a finite x > 0.
inline double split_binary(double x, int* e) noexcept {
  std::uint64_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  int exponent = static_cast<int>((bits >> 52) & 0x7ff);
  if (exponent == 0) {         // subnormal: scale into the normal range first
    x *= 18014398509481984.0;  // 2^54
    std::memcpy(&bits, &x, sizeof bits);
    exponent = static_cast<int>((bits >> 52) & 0x7ff) - 54;
  }
  *e = exponent - 1023;
  bits = (bits & 0x000fffffffffffffull) | 0x3ff0000000000000ull;
  std::memcpy(&x, &bits, sizeof bits);
  return x;
}

// 2^k for an integer k in the normal range.
inline double power_of_two(int k) noexcept {
  const std::uint64_t bits = static_cast<std::uint64_t>(k + 1023) << 52;
  double x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

inline constexpr double kLn2 = 0.69314718055994530942;

// The natural logarithm of x > 0: log(m * 2^e) = e ln 2 + log(m), with m in
// [sqrt(1/2), sqrt(2)) and log(m) = 2 atanh(s), s = (m - 1) / (m + 1), |s| < 0.172.
inline double natural_log(double x) noexcept {
  int e = 0;
  double m = split_binary(x, &e);
  if (m > 1.4142135623730951) {
    m *= 0.5;
    ++e;
  }
  const double s = (m - 1.0) / (m + 1.0), s2 = s * s;
  double sum = 0.0;
  for (int k = 23; k >= 1; k -= 2) sum = sum * s2 + 1.0 / k;  // |s|^24 < 1e-18
  return e * kLn2 + 2.0 * s * sum;
}

// exp(x) - 1, without losing precision for tiny x: x = k ln 2 + r with |r| <= ln 2 / 2,
// expm1(r) by its series, then 2^k (expm1(r) + 1) - 1.
inline double exp_minus_one(double x) noexcept {
  if (x < -40.0) return -1.0;                  // exp(x) is below half an ulp of 1
  if (x > 709.0) return __builtin_huge_val();  // overflows, as expm1 does
  const int k = static_cast<int>(x / kLn2 + (x < 0 ? -0.5 : 0.5));
  // ln 2 in two parts (Cody and Waite): k * kLn2High is exact, so r keeps its precision.
  constexpr double kLn2High = 6.93147180369123816490e-01, kLn2Low = 1.90821492927058770002e-10;
  const double r = (x - k * kLn2High) - k * kLn2Low;
  double term = r, sum = r;
  for (int n = 2; n <= 18; ++n) {  // |r|^19 / 19! < 1e-23
    term *= r / n;
    sum += term;
  }
  if (k == 0) return sum;
  return power_of_two(k) * (sum + 1.0) - 1.0;
}

// x rounded to the nearest integer, halves away from zero, as llround, for |x| < 2^62.
inline std::int64_t round_to_integer(double x) noexcept {
  const auto whole = static_cast<std::int64_t>(x);  // toward zero; x - whole is exact
  const double rest = x - static_cast<double>(whole);
  if (rest >= 0.5) return whole + 1;
  if (rest <= -0.5) return whole - 1;
  return whole;
}

}  // namespace liveheap::engine
