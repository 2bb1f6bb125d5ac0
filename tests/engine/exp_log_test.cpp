// The sampler's libc-only maths (src/engine/exp_log.hpp) against libm, over the ranges the
// sampler uses: log of (0, 1], expm1 of -size/interval, llround of weights.
#include "exp_log.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>

#include <gtest/gtest.h>

namespace liveheap::engine {
namespace {

// |a - b| in units of b's last place.
double ulps(double a, double b) {
  if (a == b) return 0;
  return std::fabs(a - b) / std::fabs(std::nextafter(b, 2 * b) - b);
}

TEST(ExpLog, NaturalLogIsWithinEightUlpsOfLibm) {
  double worst = 0;
  // u = (bits + 1) / 2^53 as the sampler draws it, from the smallest to 1, and in between.
  for (double u = 1.0 / 9007199254740992.0; u <= 1.0; u *= 1.0001)
    worst = std::max(worst, ulps(natural_log(u), std::log(u)));
  for (double x : {1e-300, 5e-324, 0.5, 0.7071067811865476, 1.4142135623730951, 3.0, 1e300})
    worst = std::max(worst, ulps(natural_log(x), std::log(x)));
  EXPECT_EQ(natural_log(1.0), 0.0);
  EXPECT_LE(worst, 8) << "worst " << worst << " ulps";
}

TEST(ExpLog, ExpMinusOneIsWithinEightUlpsOfLibm) {
  double worst = 0;
  for (double x = -1e-12; x > -50; x *= 1.0001)
    worst = std::max(worst, ulps(exp_minus_one(x), std::expm1(x)));
  for (double x : {-1e-300, 0.0, 1e-10, 0.3, 1.0, 20.0, 700.0})
    worst = std::max(worst, ulps(exp_minus_one(x), std::expm1(x)));
  EXPECT_EQ(exp_minus_one(-1e6), -1.0);
  EXPECT_EQ(exp_minus_one(800), std::numeric_limits<double>::infinity());
  EXPECT_LE(worst, 8) << "worst " << worst << " ulps";
}

TEST(ExpLog, RoundToIntegerIsLlround) {
  for (double x : {0.0, 0.49999999999999994, 0.5, 1.5, 2.5, -0.5, -2.5, 1e15 + 0.5, 4095.4999,
                   4096.0 * 1024.0 * 1.3333333, 123456789.5, -123456789.5})
    EXPECT_EQ(round_to_integer(x), std::llround(x)) << x;
  for (double x = 0.001; x < 1e17; x *= 1.37) EXPECT_EQ(round_to_integer(x), std::llround(x)) << x;
}

}  // namespace
}  // namespace liveheap::engine
