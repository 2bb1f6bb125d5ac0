// The symbolizer against modules that come and go: an address is named after the code that
// is there now, not after what was there when it was first asked about.
#include <gtest/gtest.h>

#include <cstdint>
#include <dlfcn.h>
#include <string>

#include "debug_info.hpp"
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
  // Two loads a round, each needing a debug-information state of its own.
  for (int round = 0; round < liveheap::symbolize::DebugInfo::kMaxStates / 2; ++round) {
    const std::uintptr_t alpha = load_and_name(kAlpha);
    const std::uintptr_t gamma = load_and_name(kGamma);
    ASSERT_NE(alpha, 0u);
    ASSERT_NE(gamma, 0u);
    reused += gamma == alpha;
  }
  // The case that matters happened at least once (the loader reuses the hole it made).
  EXPECT_GT(reused, 0) << "the second module never landed at the first one's address";
}

// A debug-information state cannot be freed: past the budget, a module loaded since gets its
// names without lines, never the lines of the module that was there before.
TEST(Symbolizer, PastTheBudgetAReplacedModuleHasNoLinesRatherThanTheOldOnes) {
  // What is left of the budget (other tests of this process may have spent some).
  const int kBudget = liveheap::symbolize::DebugInfo::kMaxStates - liveheap::symbolize::debug_info_states();
  const int kRounds = 2 * liveheap::symbolize::DebugInfo::kMaxStates + 1;
  int exact = 0, without_lines = 0;
  for (int round = 0; round < kRounds; ++round) {
    const Plugin& plugin = round % 2 == 1 ? kGamma : kAlpha;
    Loaded loaded = load(plugin.path, plugin.function);
    ASSERT_NE(loaded.entry, 0u);
    const liveheap::Frame f = outermost(loaded.entry);
    EXPECT_EQ(f.function, plugin.function) << "round " << round;
    EXPECT_EQ(f.module, plugin.path);
    if (f.line == 0) {
      ++without_lines;
      EXPECT_EQ(f.file, "") << "round " << round;
    } else {
      ++exact;
      EXPECT_EQ(without_lines, 0) << "lines came back after the budget was spent, round " << round;
      EXPECT_EQ(f.line, plugin.line) << "round " << round;
    }
    ASSERT_EQ(dlclose(loaded.handle), 0);
  }
  EXPECT_EQ(exact, kBudget) << "one state per module loaded while the budget lasts";
  EXPECT_EQ(liveheap::symbolize::debug_info_states(), liveheap::symbolize::DebugInfo::kMaxStates);
  EXPECT_EQ(without_lines, kRounds - kBudget);
}

}  // namespace
