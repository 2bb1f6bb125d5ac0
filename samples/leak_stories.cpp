// The memory stories of samples/leaky_server. The lines marked "// route: <name>" and
// "// site: <name>" are where liveheap must find each story; the e2e test reads the marks.
// Constructors and builders are [[gnu::noinline]] so that, whatever the optimizer does,
// their allocations stay on their own lines, as they would in a library's code.
#include "leak_stories.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "lru_cache.hpp"

namespace leaky {
namespace {

// An HTTP API client as SDKs build them: settings, default headers and I/O buffers sized
// for the largest message. Meant to be made once and shared, not made per request.
class ApiClient {
 public:
  static constexpr std::size_t kSendBufferSize = 16 * 1024;
  static constexpr std::size_t kReceiveBufferSize = 64 * 1024;

  [[gnu::noinline]] ApiClient(std::string base_url, const std::string& api_key)
      : base_url_(std::move(base_url)),
        send_buffer_(kSendBufferSize),
        receive_buffer_(kReceiveBufferSize) {  // site: client
    default_headers_.reserve(3);
    default_headers_.emplace_back("Authorization", "Bearer " + api_key);
    default_headers_.emplace_back("User-Agent", "acme-sdk-cpp/3.2.1 (linux; x86_64)");
    default_headers_.emplace_back("Accept", "application/json");
  }

  // Its own size is the caller's to count (it may live anywhere).
  HeapUse heap_use() const {
    HeapUse use = leaky::heap_use(base_url_) + leaky::heap_use(default_headers_) +
                  leaky::heap_use(send_buffer_) + leaky::heap_use(receive_buffer_);
    for (const auto& [name, value] : default_headers_)
      use += leaky::heap_use(name) + leaky::heap_use(value);
    return use;
  }
  static HeapUse receive_buffer() { return block(kReceiveBufferSize); }

 private:
  std::string base_url_;
  std::vector<std::pair<std::string, std::string>> default_headers_;
  std::vector<char> send_buffer_;
  std::vector<char> receive_buffer_;
};

// A rendered chart: a title and an RGBA canvas. Held until someone closes it.
class Figure {
 public:
  static constexpr std::size_t kWidth = 1680;
  static constexpr std::size_t kHeight = 1000;
  static constexpr std::size_t kBytesPerPixel = 4;

  [[gnu::noinline]] explicit Figure(std::uint64_t id)
      : title_("request " + std::to_string(id) + ": latency by endpoint, p50 and p99"),
        pixels_(kWidth * kHeight * kBytesPerPixel) {  // site: figure
    for (std::size_t x = 0; x < kWidth; ++x) pixels_[(kHeight / 2) * kWidth * 4 + x * 4] = 255;
  }

  HeapUse heap_use() const { return leaky::heap_use(title_) + leaky::heap_use(pixels_); }
  static HeapUse canvas() { return block(kWidth * kHeight * kBytesPerPixel); }
  std::uint64_t checksum() const { return pixels_[(kHeight / 2) * kWidth * 4]; }

 private:
  std::string title_;
  std::vector<std::uint8_t> pixels_;
};

// A query result converted to boxed cells, one heap object each (as a DOM or a list of
// Python floats would be).
struct Cell {
  double value;
  std::uint32_t row;
  std::uint32_t column;
};
struct Table {
  std::vector<std::unique_ptr<Cell>> cells;
};
constexpr std::uint32_t kColumns = 4;

[[gnu::noinline]] std::unique_ptr<Table> convert(std::size_t rows) {
  auto table = std::make_unique<Table>();
  table->cells.reserve(rows * kColumns);
  for (std::uint32_t row = 0; row < rows; ++row)
    for (std::uint32_t column = 0; column < kColumns; ++column) {
      const double value = std::sin(row + 0.25 * column);
      table->cells.push_back(std::make_unique<Cell>(Cell{value, row, column}));  // site: convert
    }
  return table;
}

HeapUse heap_use(const Table& table) {
  return block(sizeof(Table)) + leaky::heap_use(table.cells) +
         block(sizeof(Cell)) * table.cells.size();
}

// An execution plan compiled for one input shape: expensive to build, worth caching.
struct Plan {
  std::string shape;
  std::vector<float> weights;
};
constexpr std::size_t kPlanWeights = 16384;  // 64 KiB

[[gnu::noinline]] Plan compile_plan(std::string_view shape) {
  Plan plan{std::string(shape), std::vector<float>(kPlanWeights)};  // site: cache
  for (std::size_t i = 0; i < kPlanWeights; ++i) plan.weights[i] = static_cast<float>(i % 251);
  return plan;
}

using PlanCache = LruCache<std::string, Plan>;

// One cache entry, wherever its bytes are: the weights, its list node, its index node.
HeapUse plan_entry() {
  return block(kPlanWeights * sizeof(float)) + list_node<PlanCache::Entry>() +
         hash_node<PlanCache::Index>();
}

// "640x480": 1..5 digits, 'x', 1..5 digits (short enough to stay inside std::string).
bool is_shape(std::string_view shape) {
  const auto x = shape.find('x');
  const auto digits = [](std::string_view s) {
    return !s.empty() && s.size() <= 5 && s.find_first_not_of("0123456789") == s.npos;
  };
  return x != shape.npos && digits(shape.substr(0, x)) && digits(shape.substr(x + 1));
}

// The stories' state. Each registry is what the real bug keeps: nothing ever erases.
std::mutex g_mutex;
std::list<std::unique_ptr<ApiClient>> g_clients;                // guarded by g_mutex
std::map<std::uint64_t, std::unique_ptr<Figure>> g_open_figures;  // guarded by g_mutex
std::list<std::unique_ptr<Table>> g_tables;                     // guarded by g_mutex
PlanCache g_plans(kPlanCacheCapacity);                          // guarded by g_mutex
std::uint64_t g_requests = 0;                                   // guarded by g_mutex
HeapUse g_clients_use, g_figures_use, g_tables_use;             // guarded by g_mutex

constexpr const char* kBaseUrl = "https://api.acme.example/v3/";

// A 32-character key, different per request (as a session token would be): long enough
// to live on the heap, like the real one.
std::string api_key(std::uint64_t request) {
  char digits[17];
  std::snprintf(digits, sizeof digits, "%016llx", static_cast<unsigned long long>(request));
  return std::string("ak_live_") + digits + "00000000";
}

}  // namespace

StoryResult create_api_client() {
  std::lock_guard lock(g_mutex);
  const std::string key = api_key(++g_requests);
  g_clients.push_back(std::make_unique<ApiClient>(kBaseUrl, key));  // route: client
  const HeapUse kept = block(sizeof(ApiClient)) + g_clients.back()->heap_use() +
                       list_node<std::unique_ptr<ApiClient>>();
  g_clients_use += kept;
  return {.kept = kept, .site = ApiClient::receive_buffer(), .held = g_clients_use};
}

StoryResult render_figure() {
  std::lock_guard lock(g_mutex);
  const std::uint64_t id = ++g_requests;
  const auto it = g_open_figures.emplace(id, std::make_unique<Figure>(id)).first;  // route: figure
  const HeapUse kept = block(sizeof(Figure)) + it->second->heap_use() +
                       map_node<decltype(g_open_figures)>();
  g_figures_use += kept;
  return {.kept = kept, .site = Figure::canvas(), .held = g_figures_use,
          .checksum = it->second->checksum()};
}

StoryResult convert_result(std::size_t rows) {
  if (rows < 1 || rows > kMaxRows)
    throw std::invalid_argument("rows must be 1.." + std::to_string(kMaxRows));
  std::lock_guard lock(g_mutex);
  ++g_requests;
  g_tables.push_back(convert(rows));  // route: convert
  const HeapUse kept = heap_use(*g_tables.back()) + list_node<std::unique_ptr<Table>>();
  g_tables_use += kept;
  return {.kept = kept, .site = block(sizeof(Cell)) * (rows * kColumns), .held = g_tables_use};
}

StoryResult lookup_plan(std::string_view shape) {
  if (!is_shape(shape))
    throw std::invalid_argument("shape must be WIDTHxHEIGHT, e.g. 640x480 (1..5 digits each)");
  std::lock_guard lock(g_mutex);
  ++g_requests;
  StoryResult result;
  const std::string key(shape);
  if (const Plan* plan = g_plans.find(key)) {
    result.hit = true;
    result.checksum = static_cast<std::uint64_t>(plan->weights[7]);
  } else {
    const bool evicts = g_plans.size() == g_plans.capacity();
    g_plans.insert(key, compile_plan(shape));  // route: cache
    if (!evicts) {  // an evicting insert frees as much as it allocates
      result.kept = plan_entry();
      result.site = block(kPlanWeights * sizeof(float));
    }
  }
  result.entries = g_plans.size();
  result.held = plan_entry() * result.entries;
  return result;
}

StoryResult well_behaved(std::size_t kib) {
  if (kib < 1 || kib > kMaxScratchKiB)
    throw std::invalid_argument("kb must be 1.." + std::to_string(kMaxScratchKiB));
  std::vector<std::uint8_t> scratch(kib * 1024);
  std::map<std::uint32_t, std::string> words;
  for (std::uint32_t i = 0; i < 2000; ++i)
    words.emplace(i, "word " + std::to_string(i) + " of a response built and then freed");
  StoryResult result;
  for (std::size_t i = 0; i < scratch.size(); i += 4096) scratch[i] = static_cast<std::uint8_t>(i);
  for (const auto& [i, word] : words) result.checksum += word.size() + scratch[i % scratch.size()];
  return result;
}

StoryResult release_leaks() {
  std::lock_guard lock(g_mutex);
  StoryResult result;
  result.kept = -(g_clients_use + g_figures_use + g_tables_use);
  g_clients.clear();
  g_open_figures.clear();
  g_tables.clear();
  g_clients_use = g_figures_use = g_tables_use = {};
  return result;
}

}  // namespace leaky
