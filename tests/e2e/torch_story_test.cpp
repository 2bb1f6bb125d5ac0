// The PyTorch founding story on Debian's python3-torch, over jemalloc: a Conv1d fed inputs
// of ever new lengths (stories/conv_lengths.py). Each new length leaves one entry in
// ideep's LRU cache of oneDNN convolution primitives (1024 entries by default), so the heap
// under mkldnn_convolution grows by the same blocks per length until the cache is full,
// then stays: a diff after 15, 1015, 1115 and 1315 new lengths holds the blocks of 15,
// 1015, 1024 and 1024 entries, exactly. Then sampled mode in the same process: the entries
// that replace evicted ones are estimated, and their tracebacks reach the same Python line.
#include <signal.h>
#include <stdlib.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "e2e_support.hpp"

namespace liveheap::e2e {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kJemalloc = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2";
constexpr int kConvLine = 21;  // stories/conv_lengths.py: conv(torch.randn(8, 16, length))

struct Held {
  std::int64_t count = 0;
  std::int64_t size = 0;
  std::int64_t from_the_model = 0;  // blocks whose traceback reaches the script's Python line
};

// What the diff holds in tracebacks through PyTorch's oneDNN convolution that created a
// oneDNN primitive descriptor: the cache's entries.
Held cache_entries(const json& diff) {
  Held held;
  for (const json& stat : diff.at("stats")) {
    bool conv = false, descriptor = false, model = false;
    for (const json& frame : stat.at("traceback")) {
      const std::string function = frame.value("function", "");
      conv = conv || function.find("at::native::mkldnn_convolution(") != std::string::npos;
      descriptor = descriptor || function == "dnnl_primitive_desc_iterator_create";
      // The script's line that calls the convolution (Python frames in native stacks).
      model = model ||
              (frame.value("kind", "") == "python" && frame.value("function", "") == "run" &&
               frame.value("file", "").ends_with("/conv_lengths.py") && frame.value("line", 0) == kConvLine);
    }
    if (conv && descriptor) {
      held.count += stat.at("count_diff").get<std::int64_t>();
      held.size += stat.at("size_diff").get<std::int64_t>();
      if (model) held.from_the_model += stat.at("count_diff").get<std::int64_t>();
    }
  }
  return held;
}

bool wait_for_file(const fs::path& path, int seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (!fs::exists(path)) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

class TorchStory : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::system("/usr/bin/python3 -c 'import torch' 2>/dev/null") != 0 || !fs::exists(kJemalloc))
      GTEST_SKIP() << "needs Debian's python3-torch and libjemalloc2 (./build.sh test installs them)";
    char name[] = "/tmp/lht-XXXXXX";
    dir_ = ::mkdtemp(name);
    port_ = http_test::free_port();
    // Tracing starts after torch's import (POST /start), which exact mode would slow tenfold.
    python_ = std::make_unique<http_test::ChildProcess>(
        std::vector<std::string>{"/usr/bin/python3", LIVEHEAP_STORIES_DIR "/conv_lengths.py", dir_},
        std::vector<std::string>{std::string("LD_PRELOAD=") + LIVEHEAP_PRELOAD_LIBRARY + " " + kJemalloc,
                                 "LIVEHEAP_ADDR=127.0.0.1:" + std::to_string(port_), "LIVEHEAP_MODE=off",
                                 "XDG_RUNTIME_DIR=" + dir_, "OMP_NUM_THREADS=1",
                                 "PYTHONDONTWRITEBYTECODE=1"});
  }
  void TearDown() override {
    if (!python_) return;
    ::kill(python_->pid(), SIGKILL);
    python_->wait(10000);
    python_.reset();
    fs::remove_all(dir_);
  }

  // Runs `lengths` new lengths; the diff against the baseline afterwards.
  json step(int lengths) {
    ++step_;
    // Written whole, then renamed: the script polls for the name and must never read it empty.
    const fs::path go = fs::path(dir_) / ("go" + std::to_string(step_));
    std::ofstream(fs::path(go).concat(".tmp")) << lengths;
    fs::rename(fs::path(go).concat(".tmp"), go);
    EXPECT_TRUE(wait_for_file(fs::path(dir_) / ("done" + std::to_string(step_)), 120)) << step_;
    const auto diff = http_test::get(port_, "/debug/memory/diff?key=traceback&limit=10000&format=json");
    EXPECT_EQ(diff.status, 200) << diff.body;
    return diff.json();
  }

  std::string dir_;
  std::uint16_t port_ = 0;
  int step_ = 0;
  std::unique_ptr<http_test::ChildProcess> python_;
};

TEST_F(TorchStory, OneDnnPrimitiveCacheGrowsToItsCapacityAndStops) {
  ASSERT_TRUE(wait_for_file(fs::path(dir_) / "ready", 120)) << "torch never got ready";
  const auto started = http_test::post(port_, "/debug/memory/start?mode=exact&format=json");
  ASSERT_EQ(started.status, 200) << started.body;
  const auto stats = http_test::get(port_, "/debug/memory/stats?format=json");
  ASSERT_EQ(stats.status, 200) << stats.body;
  EXPECT_EQ(stats.json()["allocator"]["name"], "jemalloc") << stats.body;  // still serving
  ASSERT_EQ(http_test::post(port_, "/debug/memory/baseline").status, 200);

  const Held first = cache_entries(step(15));
  ASSERT_GT(first.count, 0) << "no cache entry under mkldnn_convolution";
  ASSERT_EQ(first.count % 15, 0) << first.count;
  const std::int64_t per_entry = first.count / 15;  // blocks each entry holds
  EXPECT_EQ(first.from_the_model, first.count) << "the cache's tracebacks reach the model's line";

  const Held growing = cache_entries(step(1000));  // 1015 new lengths: the cache is not full
  EXPECT_EQ(growing.count, 1015 * per_entry);
  EXPECT_GT(growing.size, first.size * 50);

  const Held full = cache_entries(step(100));  // 1115: full, every older entry evicted
  EXPECT_EQ(full.count, 1024 * per_entry);
  const Held stays = cache_entries(step(200));  // 1315: still full
  EXPECT_EQ(stays.count, 1024 * per_entry);
  // Entries of other lengths replace the evicted ones: the bytes stay within 1%.
  EXPECT_LT(std::abs(stays.size - full.size), full.size / 100) << stays.size << " vs " << full.size;
  std::printf("cache entries: %lld blocks each; at capacity %lld bytes (%lld per entry)\n",
              static_cast<long long>(per_entry), static_cast<long long>(full.size),
              static_cast<long long>(full.size / 1024));

  // Sampled mode on the same process: the entries that replace evicted ones are estimated,
  // and every sampled one's traceback reaches the same Python line. (A 64 KiB interval: a
  // few hundred entries of a few KiB each are then dozens of samples, not a handful.)
  ASSERT_EQ(http_test::post(port_, "/debug/memory/stop").status, 200);
  const auto sampled =
      http_test::post(port_, "/debug/memory/start?mode=sampled&sample_interval=65536&format=json");
  ASSERT_EQ(sampled.status, 200) << sampled.body;
  ASSERT_EQ(http_test::post(port_, "/debug/memory/baseline").status, 200);
  const Held replaced = cache_entries(step(300));
  EXPECT_GT(replaced.count, 0) << "no sampled cache entry under mkldnn_convolution";
  EXPECT_EQ(replaced.from_the_model, replaced.count)
      << "the sampled entries' tracebacks reach the model's line";
  const auto lines = http_test::get(
      port_, "/debug/memory/diff?key=line&cumulative=1&include=*/conv_lengths.py&format=json&limit=5");
  ASSERT_EQ(lines.status, 200) << lines.body;
  const json lines_answer = lines.json();  // a range-for over a temporary's member dangles
  // The script's lines that hold the growth, cumulative: the loop's call of run() (line 38)
  // and run's convolution line, each with at least the cache's sampled entries.
  bool conv_line_holds_them = false;
  for (const json& stat : lines_answer.at("stats"))
    conv_line_holds_them = conv_line_holds_them || (stat["line"] == kConvLine &&
                                                    stat["size_diff"].get<std::int64_t>() >= replaced.size);
  EXPECT_TRUE(conv_line_holds_them) << replaced.size << " B of sampled cache entries; " << lines.body;
}

}  // namespace
}  // namespace liveheap::e2e
