// The symbolizer against modules that come and go: an address is named after the code that
// is there now, not after what was there when it was first asked about; and the symbolizer
// process, which reads the debug information, restarted when it dies.
#include <gtest/gtest.h>

#include <backtrace.h>
#include <execinfo.h>
#include <signal.h>

#include <algorithm>
#include <boost/core/demangle.hpp>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <dlfcn.h>
#include <functional>
#include <string>
#include <vector>

#include "main_program.hpp"
#include "symbolizer.hpp"

namespace {

struct Loaded {
  void* handle = nullptr;
  std::uintptr_t entry = 0;
};

Loaded load(const char* path, const char* symbol) {
  Loaded l;
  l.handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (l.handle == nullptr) {
    ADD_FAILURE() << dlerror();
    return l;
  }
  l.entry = reinterpret_cast<std::uintptr_t>(dlsym(l.handle, symbol));
  EXPECT_NE(l.entry, 0u) << symbol << " in " << path;
  return l;
}

// What the symbolizer says of the code at `entry` (asked as a return address: entry + 1).
liveheap::Frame outermost(std::uintptr_t entry) {
  const std::uintptr_t address = entry + 1;
  auto frames = liveheap::symbolize::symbolize({&address, 1});
  if (frames.size() != 1 || frames[0].empty()) {
    ADD_FAILURE() << "no frames";
    return {};
  }
  return frames[0].back();
}

// One build of the plugin: its file, its function and the line of that function's body.
struct Plugin {
  const char* path;
  const char* function;
  unsigned line;
};
const Plugin kAlpha{LIVEHEAP_PLUGIN_A, "plugin_alpha_entry", 6};
const Plugin kGamma{LIVEHEAP_PLUGIN_B, "plugin_gamma_entry", 12};

// Loads `plugin`, checks what the symbolizer names at its entry, unloads it; its address.
std::uintptr_t load_and_name(const Plugin& plugin) {
  Loaded loaded = load(plugin.path, plugin.function);
  if (loaded.entry == 0) return 0;
  const liveheap::Frame f = outermost(loaded.entry);
  EXPECT_EQ(f.function, plugin.function);
  EXPECT_EQ(f.file.substr(f.file.rfind('/') + 1), "symbolize_plugin.cpp");
  EXPECT_EQ(f.line, plugin.line) << plugin.function;
  EXPECT_EQ(f.module, plugin.path);
  EXPECT_EQ(dlclose(loaded.handle), 0);
  return loaded.entry;
}

TEST(Symbolizer, AModuleLoadedWhereAnUnloadedOneWasGetsItsOwnNames) {
  int reused = 0;
  for (int round = 0; round < 3; ++round) {
    const std::uintptr_t alpha = load_and_name(kAlpha);
    const std::uintptr_t gamma = load_and_name(kGamma);
    ASSERT_NE(alpha, 0u);
    ASSERT_NE(gamma, 0u);
    reused += gamma == alpha;
  }
  // The case that matters happened at least once (the loader reuses the hole it made).
  EXPECT_GT(reused, 0) << "the second module never landed at the first one's address";
}

// The symbolizer reads each file once, by path and build-id: a module replaced at an address
// any number of times keeps its own lines (no budget of states to run out of).
TEST(Symbolizer, EveryModuleLoadedInTurnAtOneAddressHasItsOwnLines) {
  for (int round = 0; round < 12; ++round) {
    const Plugin& plugin = round % 2 == 1 ? kGamma : kAlpha;
    Loaded loaded = load(plugin.path, plugin.function);
    ASSERT_NE(loaded.entry, 0u);
    const liveheap::Frame f = outermost(loaded.entry);
    EXPECT_EQ(f.function, plugin.function) << "round " << round;
    EXPECT_EQ(f.module, plugin.path);
    EXPECT_EQ(f.line, plugin.line) << "round " << round;
    ASSERT_EQ(dlclose(loaded.handle), 0);
  }
  const liveheap::symbolize::Status status = liveheap::symbolize::status();
  EXPECT_EQ(status.problem, "");
  EXPECT_GT(status.pid, 0);
  EXPECT_NE(status.pid, getpid()) << "the debug information is read in a process of its own";
  EXPECT_GT(status.files, 0);
}

// A symbolizer killed between two reports is started again by the next one that needs it.
TEST(Symbolizer, AKilledSymbolizerIsStartedAgainByTheNextReport) {
  Loaded alpha = load(kAlpha.path, kAlpha.function);
  ASSERT_NE(alpha.entry, 0u);
  EXPECT_EQ(outermost(alpha.entry).line, kAlpha.line);
  const pid_t first = liveheap::symbolize::status().pid;
  ASSERT_GT(first, 0);
  ASSERT_EQ(kill(first, SIGKILL), 0);
  ASSERT_EQ(dlclose(alpha.handle), 0);  // its names leave the cache: the next ask goes out
  Loaded gamma = load(kGamma.path, kGamma.function);
  ASSERT_NE(gamma.entry, 0u);
  const liveheap::Frame f = outermost(gamma.entry);
  EXPECT_EQ(f.function, kGamma.function);
  EXPECT_EQ(f.line, kGamma.line);
  const liveheap::symbolize::Status status = liveheap::symbolize::status();
  EXPECT_EQ(status.problem, "");
  EXPECT_NE(status.pid, first);
  EXPECT_GT(status.pid, 0);
  ASSERT_EQ(dlclose(gamma.handle), 0);
}

// What liveheap named in the process itself before the symbolizer was a process of its own:
// one libbacktrace state over every loaded object, the inline chain at address - 1, the
// function by its dynamic symbol, else the symbol table's, else module+offset.
std::vector<liveheap::Frame> named_in_process(backtrace_state* state, std::uintptr_t address) {
  liveheap::Frame f;
  f.address = address;
  const std::uintptr_t pc = address - 1;
  Dl_info info{};
  f.module = liveheap::symbolize::object_file(reinterpret_cast<void*>(pc), info);
  std::vector<liveheap::Frame> frames;
  backtrace_pcinfo(
      state, pc,
      [](void* out, std::uintptr_t, const char* file, int line, const char* function) {
        if (file == nullptr && function == nullptr) return 0;
        liveheap::Frame frame;
        frame.function = function == nullptr ? "" : boost::core::demangle(function);
        frame.file = file == nullptr ? "" : file;
        frame.line = static_cast<unsigned>(line < 0 ? 0 : line);
        static_cast<std::vector<liveheap::Frame>*>(out)->push_back(frame);
        return 0;
      },
      [](void*, const char*, int) {}, &frames);
  for (liveheap::Frame& frame : frames) {
    frame.address = address;
    frame.module = f.module;
  }
  if (info.dli_fbase != nullptr && info.dli_sname != nullptr) {
    f.function = boost::core::demangle(info.dli_sname);
  } else {
    backtrace_syminfo(
        state, pc,
        [](void* out, std::uintptr_t, const char* symbol, std::uintptr_t, std::uintptr_t) {
          if (symbol != nullptr) *static_cast<std::string*>(out) = boost::core::demangle(symbol);
        },
        [](void*, const char*, int) {}, &f.function);
  }
  if (f.function.empty() && !frames.empty()) f.function = frames.back().function;
  if (f.function.empty()) {
    const std::uintptr_t offset = address - reinterpret_cast<std::uintptr_t>(info.dli_fbase);
    char text[32];
    std::snprintf(text, sizeof text, "+0x%zx", static_cast<std::size_t>(offset));
    f.function = f.module.substr(f.module.rfind('/') + 1) + text;
  }
  if (frames.empty()) return {f};
  frames.back().function = f.function;
  return frames;
}

[[gnu::noinline]] std::vector<std::uintptr_t> stack_here() {
  void* pcs[64];
  const int n = backtrace(pcs, 64);
  std::vector<std::uintptr_t> out;
  for (int i = 0; i < n; ++i) out.push_back(reinterpret_cast<std::uintptr_t>(pcs[i]));
  return out;
}

// The names the symbolizer process gives are the ones the process would have read itself,
// frame for frame (function, file, line, module), over the test's own code, libstdc++'s
// templates inlined into it, libc and libstdc++ (their debug information when installed).
TEST(Symbolizer, NamesAreTheOnesTheProcessWouldHaveReadItself) {
  std::vector<std::uintptr_t> addresses;
  std::vector<int> values = {3, 1, 2};
  std::sort(values.begin(), values.end(), [&](int a, int b) {
    if (addresses.empty()) addresses = stack_here();
    return a < b;
  });
  const std::function<void()> through_function = [&] {
    for (std::uintptr_t a : stack_here()) addresses.push_back(a);
  };
  through_function();
  for (const void* code : {reinterpret_cast<const void*>(&qsort), reinterpret_cast<const void*>(&malloc),
                           reinterpret_cast<const void*>(&snprintf), reinterpret_cast<const void*>(&stack_here),
                           reinterpret_cast<const void*>(&named_in_process)})
    for (std::uintptr_t offset = 1; offset < 200; offset += 13) addresses.push_back(reinterpret_cast<std::uintptr_t>(code) + offset);
  ASSERT_GT(addresses.size(), 60u);

  backtrace_state* state = backtrace_create_state(nullptr, 0, [](void*, const char*, int) {}, nullptr);
  ASSERT_NE(state, nullptr);
  const auto named = liveheap::symbolize::symbolize(addresses);
  ASSERT_EQ(named.size(), addresses.size());
  int with_lines = 0;
  for (std::size_t i = 0; i < addresses.size(); ++i) {
    const std::vector<liveheap::Frame> expected = named_in_process(state, addresses[i]);
    ASSERT_EQ(named[i].size(), expected.size()) << "at " << std::hex << addresses[i] << " " << expected.back().function;
    for (std::size_t k = 0; k < expected.size(); ++k) {
      EXPECT_EQ(named[i][k].function, expected[k].function) << std::hex << addresses[i];
      EXPECT_EQ(named[i][k].file, expected[k].file) << std::hex << addresses[i];
      EXPECT_EQ(named[i][k].line, expected[k].line) << std::hex << addresses[i];
      EXPECT_EQ(named[i][k].module, expected[k].module) << std::hex << addresses[i];
      EXPECT_EQ(named[i][k].address, expected[k].address);
    }
    with_lines += expected.front().line != 0;
  }
  EXPECT_GT(with_lines, 20) << "the comparison covered code with debug information";
}

}  // namespace
