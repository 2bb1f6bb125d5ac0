// A C++ throw/catch costs the same with liveheap as without: liveheap's stack walk must
// never put libunwind's _Unwind_* in front of libgcc_s's (that made every throw ~90x
// slower in wall time). Measured in instructions under callgrind, which counts the same
// on a busy machine as on an idle one; a control run with libunwind preloaded shows the
// measurement catches the failure.
#include <array>
#include <cstdio>
#include <string>

#include <gtest/gtest.h>

namespace {

constexpr int kFewRounds = 100;
constexpr int kManyRounds = 1100;

// Instructions callgrind counted for `env` + throw_loop `rounds`; -1 when it did not run.
long long instructions(const std::string& env, int rounds) {
  const std::string command = "env " + env + " valgrind --tool=callgrind --callgrind-out-file=/dev/null " +
                              LIVEHEAP_THROW_LOOP_PATH + " " + std::to_string(rounds) + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return -1;
  std::string output;
  std::array<char, 4096> buffer;
  while (std::size_t n = std::fread(buffer.data(), 1, buffer.size(), pipe)) output.append(buffer.data(), n);
  if (pclose(pipe) != 0) return -1;
  const std::size_t at = output.find("Collected : ");
  return at == std::string::npos ? -1 : std::stoll(output.substr(at + 12));
}

// Instructions per throw/catch round: the difference of two run lengths cancels start-up
// (which differs with the preload library: it loads libunwind, reads the environment).
double per_throw(const std::string& env) {
  const long long few = instructions(env, kFewRounds);
  const long long many = instructions(env, kManyRounds);
  if (few < 0 || many < 0) {
    ADD_FAILURE() << "callgrind did not run throw_loop with env [" << env << "] (is valgrind installed?)";
    return 0;
  }
  return static_cast<double>(many - few) / (kManyRounds - kFewRounds);
}

TEST(ThrowCost, IsTheSameWithLiveheapAsWithout) {
  const std::string preload = std::string("LD_PRELOAD=") + LIVEHEAP_PRELOAD_PATH;
  const double bare = per_throw("LIVEHEAP_UNUSED=1");
  ASSERT_GT(bare, 1000);  // a throw through 10 frames is thousands of instructions
  const double off = per_throw(preload + " LIVEHEAP_MODE=off");
  const double sampled = per_throw(preload + " LIVEHEAP_MODE=sampled");
  const double exact = per_throw(preload + " LIVEHEAP_MODE=exact");
  std::printf(
      "instructions per throw: bare %.0f, off %.0f (%.3fx), sampled %.0f (%.3fx), exact %.0f (%.3fx)\n", bare,
      off, off / bare, sampled, sampled / bare, exact, exact / bare);
  EXPECT_LT(off / bare, 1.02);
  EXPECT_LT(sampled / bare, 1.02);
  // Exact mode traces the exception object's own allocation (one stack walk per throw).
  EXPECT_LT(exact / bare, 1.25);
}

TEST(ThrowCost, TheMeasurementSeesLibunwindsUnwinder) {
  // The failure this guards against, on purpose: libunwind's _Unwind_RaiseException first.
  const double bare = per_throw("LIVEHEAP_UNUSED=1");
  const double with_libunwind = per_throw("LD_PRELOAD=" LIVEHEAP_LIBUNWIND_PATH);
  std::printf("instructions per throw: bare %.0f, libunwind's unwinder %.0f (%.2fx)\n", bare, with_libunwind,
              with_libunwind / bare);
  EXPECT_GT(with_libunwind / bare, 2.0);
}

}  // namespace
