// The large short-lived blocks workload of the overhead benchmark: builds, fills
// and drops std::vector<char>s of 64 KiB to 16 MiB, as a server building image, compressed
// or serialized responses does. NOT linked to liveheap: run bare and under LD_PRELOAD.
//
//   large_blocks [--rounds N] [--vectors V]
//
// A round is V vectors, one at a time, of sizes spread log-uniformly over 64 KiB..16 MiB
// (a fixed seed: the same sizes every round and every run); each is value-initialized (the
// vector zeroes it), a byte written on every page, and dropped. Prints the median CPU time
// of a round (`cpu_ns_per_round=`), and per vector the page faults (`minflt_per_vector=`,
// getrusage) and madvise calls (`madvise_per_vector=`, madvise_counter.cpp compiled in: this
// binary exports its own madvise, which a preloaded library's calls reach).
#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "madvise_counter.hpp"

namespace {

double thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

long minor_faults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

// Sizes log-uniform over [64 KiB, 16 MiB] from a fixed xorshift seed.
std::vector<std::size_t> make_sizes(int n) {
  std::uint64_t rng = 0x2545F4914F6CDD1Dull;
  std::vector<std::size_t> sizes;
  for (int i = 0; i < n; ++i) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    const double u = static_cast<double>(rng >> 11) / 9007199254740992.0;  // [0, 1)
    sizes.push_back(static_cast<std::size_t>(std::exp2(16.0 + 8.0 * u)));
  }
  return sizes;
}

[[gnu::noinline]] std::uint64_t one_vector(std::size_t n) {
  std::vector<char> v(n);
  for (std::size_t i = 0; i < n; i += 4096) v[i] = static_cast<char>(i >> 12);
  return static_cast<unsigned char>(v[n / 2]) + v.size();
}

[[gnu::noinline]] std::uint64_t one_round(const std::vector<std::size_t>& sizes) {
  std::uint64_t sink = 0;
  for (std::size_t n : sizes) sink += one_vector(n);
  return sink;
}

long parse_long(const char* text) {
  char* end = nullptr;
  const long v = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || v < 1) {
    std::fprintf(stderr, "large_blocks: want a positive integer, got '%s'\n", text);
    std::exit(2);
  }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  long rounds = 15, vectors = 40;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--rounds") == 0) rounds = parse_long(argv[i + 1]);
    else if (std::strcmp(argv[i], "--vectors") == 0) vectors = parse_long(argv[i + 1]);
    else {
      std::fprintf(stderr, "usage: large_blocks [--rounds N] [--vectors V]\n");
      return 2;
    }
  }
  const std::vector<std::size_t> sizes = make_sizes(static_cast<int>(vectors));
  volatile std::uint64_t sink = 0;
  for (int i = 0; i < 2; ++i) sink = sink + one_round(sizes);  // warm-up: heap grown, pages in
  std::vector<double> cpu;
  const long faults_before = minor_faults();
  const long madvise_before = liveheap_bench_madvise_calls();
  for (long r = 0; r < rounds; ++r) {
    const double begin = thread_cpu_ns();
    sink = sink + one_round(sizes);
    cpu.push_back(thread_cpu_ns() - begin);
  }
  const double ops = static_cast<double>(rounds * vectors);
  std::sort(cpu.begin(), cpu.end());
  std::printf("cpu_ns_per_round=%.0f\nminflt_per_vector=%.2f\nmadvise_per_vector=%.2f\n",
              cpu[cpu.size() / 2], static_cast<double>(minor_faults() - faults_before) / ops,
              static_cast<double>(liveheap_bench_madvise_calls() - madvise_before) / ops);
  return 0;
}
